import { openGguf, type GgufFile } from '../gguf/gguf-file.ts';
import { ggufTensorSource } from './gguf-tensor-source.ts';
import { llamaConfigFrom, type LlamaConfig } from './llama-config.ts';
import { TfLlamaModel, type LlamaLoadOptions } from './llama-model.ts';

/** The config a GGUF file's metadata describes (INVALID_INPUT for an architecture the trainer lacks). */
export function llamaConfigOf(file: GgufFile): LlamaConfig {
  const metadata = file.metadata as Record<string, unknown>;
  const tokenizer = (metadata.tokenizer as { ggml?: { tokens?: unknown[] } } | undefined)?.ggml;
  return llamaConfigFrom({
    architecture: file.architecture,
    arch: (metadata[file.architecture] ?? {}) as Record<string, unknown>,
    tokenCount: tokenizer?.tokens?.length ?? 0,
    tensorNames: new Set(file.tensors.map((t) => t.name)),
  });
}

/** Opens a GGUF checkpoint and loads its frozen weights into tfjs (dequantized once). */
export async function loadTfLlama(
  path: string,
  opts: LlamaLoadOptions = {},
): Promise<{ model: TfLlamaModel; config: LlamaConfig; architecture: string }> {
  const file = await openGguf(path);
  try {
    const config = llamaConfigOf(file);
    const model = await TfLlamaModel.load(config, ggufTensorSource(file), opts);
    return { model, config, architecture: file.architecture };
  } finally {
    await file.close();
  }
}

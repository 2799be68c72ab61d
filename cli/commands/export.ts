/**
 * `turnstream export --version N [--merged] [--out PATH] [--type F16|F32|Q8_0] [--json]`: a weight
 * version of the served GGUF model for use elsewhere — its LoRA adapter as is (llama.cpp's
 * `--lora FILE`, Ollama's `ADAPTER FILE`), or the base with the adapter folded in, as one GGUF.
 */
import { copyFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { AdapterStore, mergeLora, sha256File } from '../../policy/index.ts';
import { ErrorCodes, TurnstreamError, invalidInput } from '../../core/index.ts';
import { loadConfig } from '../config.ts';
import { servedModel } from '../served-model.ts';

interface ExportFlags {
  version: string;
  merged?: boolean;
  out?: string;
  type: string;
  model?: string;
  json?: boolean;
}

export function register(program: Command): void {
  program
    .command('export')
    .description('write a weight version for use elsewhere: its LoRA adapter GGUF, or (--merged) the base with the adapter folded in')
    .requiredOption('--version <n>', 'the weight version')
    .option('--merged', 'write the whole model with the adapter merged, instead of the adapter')
    .option('--out <path>', 'output file (default <model id>-v<N>.lora.gguf or <model id>-v<N>.gguf)')
    .option('--type <type>', 'storage type of merged weights: F16, F32 or Q8_0', 'F16')
    .option('--model <spec>', 'the model (TURNSTREAM_MODEL)')
    .option('--json', 'print the result as one JSON object')
    .action(async (f: ExportFlags) => {
      const config = loadConfig();
      if (!/^\d+$/.test(f.version)) throw invalidInput(`--version must be a whole number, got ${JSON.stringify(f.version)}`, '--version');
      if (!['F16', 'F32', 'Q8_0'].includes(f.type))
        throw invalidInput(`--type is F16, F32 or Q8_0, not ${JSON.stringify(f.type)}`, '--type');
      const served = await servedModel(config, { spec: f.model, progress: !f.json });
      if (served.kind !== 'llama') {
        throw new TurnstreamError(
          ErrorCodes.INVALID_INPUT,
          'export writes GGUF versions; the built-in model keeps its checkpoints in the weight store',
          { param: '--model' },
        );
      }
      const ref = await new AdapterStore(config.weightsDir).ref(served.modelId, Number(f.version));
      const store = new AdapterStore(config.weightsDir);
      await store.verify(ref);
      const version = ref.version;
      let out: string;
      if (f.merged) {
        out = resolve(f.out ?? `${served.modelId}-v${version}.gguf`);
        if (ref.adapterPath)
          await mergeLora({ base: served.path, adapter: ref.adapterPath, output: out, type: f.type as 'F16' | 'F32' | 'Q8_0' });
        else await copyFile(served.path, out); // version 0 is the base itself
      } else {
        if (!ref.adapterPath)
          throw invalidInput('version 0 is the base itself and has no adapter; use --merged to write the base', '--version');
        out = resolve(f.out ?? `${served.modelId}-v${version}.lora.gguf`);
        await copyFile(ref.adapterPath, out);
      }
      const result = {
        model: served.name,
        version,
        kind: f.merged ? 'merged' : 'adapter',
        path: out,
        sha256: await sha256File(out),
        base: { path: served.path, sha256: served.sha256 },
        use: f.merged
          ? `llama-cli -m ${out}    (Ollama: FROM ${out})`
          : `llama-cli -m ${served.path} --lora ${out}    (Ollama: FROM <base> + ADAPTER ${out})`,
      };
      process.stdout.write(
        f.json
          ? JSON.stringify(result) + '\n'
          : `${result.kind} of ${result.model} v${version}: ${out}\n  sha256 ${result.sha256}\n  use: ${result.use}\n`,
      );
    });
}

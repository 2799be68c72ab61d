/**
 * Exact next-token log-probabilities from llama.cpp (node-llama-cpp), for tests that compare a
 * GGUF model, adapter or export against another: teacher-forced evaluation with sampling
 * settings that truncate nothing (temperature 1, no top-k/top-p/min-p).
 */
import { getLlama, LlamaLogLevel, type ControlledEvaluateInputItem, type Llama, type Token } from 'node-llama-cpp';

let shared: Promise<Llama> | undefined;

/** One llama.cpp instance per test process (CPU or GPU, never a source build). */
export const testLlama = (): Promise<Llama> => (shared ??= getLlama({ gpu: 'auto', build: 'never', logLevel: LlamaLogLevel.error }));

/** Options of {@link llamaLogProbs}. */
export interface LlamaLogProbsOptions {
  /** LoRA adapters to apply. @default [] */
  adapters?: Array<{ filePath: string; scale?: number }>;
  /** @default 256 */
  contextSize?: number;
}

/**
 * log p(· | tokens[0..i]) for every position i: one row of the whole vocabulary per input token.
 */
export async function llamaLogProbs(
  modelPath: string,
  tokens: readonly number[],
  options: LlamaLogProbsOptions = {},
): Promise<Float64Array[]> {
  const llama = await testLlama();
  const model = await llama.loadModel({ modelPath });
  try {
    const context = await model.createContext({
      contextSize: options.contextSize ?? 256,
      threads: 1,
      ...(options.adapters?.length ? { lora: { adapters: options.adapters } } : {}),
    });
    const vocabSize = (model.fileInfo.metadata.tokenizer.ggml.tokens as readonly unknown[]).length;
    const exact = { temperature: 1, topK: 0, topP: 1, minP: 0 };
    const results = await context
      .getSequence()
      .controlledEvaluate(
        tokens.map((t): ControlledEvaluateInputItem => [t as Token, { generateNext: { probabilities: true, options: exact } }]),
      );
    await context.dispose();
    return tokens.map((_, i) => {
      const row = new Float64Array(vocabSize).fill(-Infinity);
      for (const [token, p] of results[i]?.next.probabilities ?? []) row[token] = Math.log(p);
      return row;
    });
  } finally {
    await model.dispose();
  }
}

/** Largest and mean |a − b| over all positions and tokens. */
export function logProbDistance(a: readonly Float64Array[], b: readonly Float64Array[]): { max: number; mean: number } {
  let max = 0;
  let sum = 0;
  let n = 0;
  for (let i = 0; i < a.length; i++) {
    for (let j = 0; j < a[i].length; j++) {
      const d = Math.abs(a[i][j] - b[i][j]);
      if (d > max) max = d;
      sum += d;
      n++;
    }
  }
  return { max, mean: n ? sum / n : 0 };
}

// `turnstream bench model [--json] [--model smollm2-135m] [--tokens 128,256] [--steps 2] [--backends wasm,cpu]`:
// the real model in both engines. llama.cpp (the serving engine, the peer) generates and
// evaluates prompts; tfjs (the trainer) runs the same model's forward pass, so its tokens/s are
// set against llama.cpp's prompt tokens/s (the ratio); LoRA steps at each size on each tfjs
// backend; the hot swap of an adapter in llama.cpp; peak RSS of each engine's process.
// `--model tiny` writes a tiny random Llama GGUF for a smoke run.
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Token } from 'node-llama-cpp';
import * as tf from '@tensorflow/tfjs';
import type { BenchArgs } from '../cli/commands/bench.ts';
import {
  BACKEND_ORDER,
  llamaBackendName,
  llamaConfigOf,
  llamaRuntime,
  loadTfLlama,
  LoraAdapter,
  openGguf,
  resolveModel,
  selectBackend,
  writeLoraAdapter,
  writeTinyModel,
  type BackendName,
} from '../policy/index.ts';
import type { Sample } from '../schemas/index.ts';
import { AdamW, learnerStep, LoraTrainable } from '../trainer/index.ts';
import { resolveOptions, type BenchOptions, type BenchResult } from './options.ts';

export const description =
  'the real model in both engines: llama.cpp generation and prompt tokens/s (the peer), the tfjs forward pass against it, LoRA step seconds per size and tfjs backend, hot-swap ms, peak RSS';

export const options: BenchOptions = {
  model: { type: 'string', default: 'smollm2-135m', help: 'model spec (a catalog name, a .gguf path, hf:…), or tiny for a smoke run' },
  tokens: { type: 'string', default: '128,256', help: 'sequence lengths of the forward and LoRA-step measurements' },
  steps: { default: '2', help: 'timed LoRA steps per size and backend (after one warm-up)' },
  'gen-tokens': { default: '128', help: 'tokens llama.cpp generates per measurement' },
  threads: { default: '1', help: 'llama.cpp threads' },
  backends: { type: 'list', default: 'wasm,cpu', choices: BACKEND_ORDER, help: 'tfjs backends to measure' },
};

interface TfResult {
  backend: string;
  available: boolean;
  error?: string;
  /** Forward tokens/s at each size. */
  forwardTokensPerSec?: Record<string, number>;
  /** Seconds per LoRA step (one sample of that many tokens, half of them the response). */
  loraStepSeconds?: Record<string, number>;
  loraParameters?: number;
  peakRssMB?: number;
}

/** A sample of T tokens, the second half its response. */
function sampleOf(ids: number[]): Sample {
  const P = Math.floor(ids.length / 2);
  const R = ids.length - P;
  return {
    sampleId: 's',
    turnId: 't',
    sessionId: 's',
    userId: null,
    policyModelId: 'bench',
    policyVersion: 0,
    method: 'RL',
    tokens: ids,
    promptLength: P,
    responseLength: R,
    lossMask: new Array<number>(R).fill(1),
    rolloutLogprobs: new Array<number>(R).fill(-2),
    exactLogprobs: false,
    reward: 1,
    teacherLogprobs: null,
    teacherTopK: null,
    teacherPromptTokens: null,
    weight: 1,
    judgeId: 'bench',
    createdAt: 0,
    tag: null,
  };
}

/** Varied token ids in range (the model's own text is not needed to time it). */
const idsOf = (T: number, V: number): number[] => Array.from({ length: T }, (_, i) => (i * 7919 + 13) % Math.min(V, 30_000));

async function child(backend: BackendName, path: string, sizes: number[], steps: number): Promise<TfResult> {
  const got = await selectBackend(backend);
  if (got !== backend) return { backend, available: false, error: `not available here (fell back to ${got})` };
  const { model, config } = await loadTfLlama(path);
  const lora = LoraAdapter.init(config, {});
  const policy = new LoraTrainable(model, lora, Math.max(...sizes));
  const opt = new AdamW({ lr: 1e-5 });
  const forward: Record<string, number> = {};
  const step: Record<string, number> = {};
  for (const T of sizes) {
    const ids = idsOf(T, config.vocabSize);
    tf.dispose(model.logitsAt(ids, [T - 1], lora)); // warm-up: packs every weight once
    let t0 = performance.now();
    tf.dispose(model.logitsAt(ids, [T - 1], lora));
    forward[T] = Math.round((T * 1000) / (performance.now() - t0));
    const items = [{ sample: sampleOf(ids) }];
    await learnerStep(policy, opt, items, { measureAfter: false });
    t0 = performance.now();
    for (let i = 0; i < steps; i++) await learnerStep(policy, opt, items, { measureAfter: false });
    step[T] = Number(((performance.now() - t0) / 1000 / steps).toFixed(2));
  }
  const result: TfResult = {
    backend,
    available: true,
    forwardTokensPerSec: forward,
    loraStepSeconds: step,
    loraParameters: lora.parameterCount,
    peakRssMB: Math.round(process.resourceUsage().maxRSS / 1024),
  };
  lora.dispose();
  model.dispose();
  return result;
}

export async function run(args: BenchArgs): Promise<BenchResult & Record<string, unknown>> {
  const o = resolveOptions(options, args.options);
  const sizes = o.tokens.split(',').map(Number);
  if (sizes.some((n) => !Number.isInteger(n) || n < 8)) throw new Error('--tokens: whole numbers ≥ 8, comma-separated');
  const tmp = await mkdtemp(join(tmpdir(), 'bench-model-'));
  try {
    let path: string;
    let name = o.model;
    if (o.model === 'tiny') {
      path = (await writeTinyModel(join(tmp, 'tiny.gguf'), { architecture: 'llama', contextLength: Math.max(512, ...sizes) + 16 })).path;
    } else {
      const m = await resolveModel(o.model, {
        cacheDir: args.config.model.cacheDir,
        hfEndpoint: args.config.model.hfEndpoint,
        hfToken: args.config.model.hfToken,
      });
      if (!m.path) throw new Error('bench model needs a GGUF model, not builtin');
      path = m.path;
      name = m.name;
    }

    // The serving engine.
    args.progress(`bench model: llama.cpp on ${name} …`);
    const llama = await llamaRuntime();
    const lm = await llama.loadModel({ modelPath: path });
    const ctx = await lm.createContext({ contextSize: Math.max(...sizes) * 2 + Number(o['gen-tokens']) + 64, threads: Number(o.threads) });
    const seq = ctx.getSequence();
    const V = (lm.fileInfo.metadata.tokenizer?.ggml?.tokens as unknown[] | undefined)?.length ?? 256;
    const llamaRssMB = Math.round(process.memoryUsage().rss / 2 ** 20);
    const prompt: Record<string, number> = {};
    for (const T of sizes) {
      const ids = idsOf(T, V) as Token[];
      await seq.clearHistory();
      await seq.evaluateWithoutGeneratingNewTokens(ids); // warm-up
      await seq.clearHistory();
      const t0 = performance.now();
      await seq.evaluateWithoutGeneratingNewTokens(ids);
      prompt[T] = Math.round((T * 1000) / (performance.now() - t0));
    }
    await seq.clearHistory();
    const genTokens = Number(o['gen-tokens']);
    let n = 0;
    const g0 = performance.now();
    for await (const r of seq.evaluateWithMetadata(
      idsOf(16, V) as Token[],
      { confidence: true },
      { temperature: 1, topK: 0, topP: 1, minP: 0, seed: 1 },
    )) {
      void r;
      if (++n >= genTokens) break;
    }
    const generation = Math.round((n * 1000) / (performance.now() - g0));

    // A hot swap: a new context with an adapter of the default LoRA shape (random values).
    const file = await openGguf(path);
    const config = llamaConfigOf(file);
    await file.close();
    const shapes = LoraAdapter.init(config, {});
    const pairs = (await shapes.toPairs()).map((p) => ({ ...p, b: p.b.map((_, i) => ((i % 7) - 3) * 1e-3) }));
    shapes.dispose();
    const adapterPath = join(tmp, 'adapter.gguf');
    await writeLoraAdapter(adapterPath, { architecture: file.architecture, alpha: 16, pairs });
    const s0 = performance.now();
    const swapped = await lm.createContext({
      contextSize: 512,
      threads: Number(o.threads),
      lora: { adapters: [{ filePath: adapterPath, scale: 1 }] },
    });
    const hotSwapMs = Number((performance.now() - s0).toFixed(1));
    await swapped.dispose();
    await ctx.dispose();
    await lm.dispose();

    // The trainer, one process per tfjs backend.
    const backends: TfResult[] = [];
    for (const b of o.backends.split(',') as BackendName[]) {
      args.progress(`bench model: tfjs ${b} …`);
      const p = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--child', b, path, o.tokens, o.steps], {
        encoding: 'utf8',
        timeout: 3_600_000,
        maxBuffer: 16 << 20,
      });
      const line = p.stdout.trim().split('\n').pop() ?? '';
      try {
        backends.push(JSON.parse(line) as TfResult);
      } catch {
        backends.push({
          backend: b,
          available: false,
          error: (p.stderr || `exit ${p.status}`).trim().split('\n').slice(-1)[0].slice(0, 300),
        });
      }
    }
    const best = backends
      .filter((b) => b.available)
      .sort((a, b) => (b.forwardTokensPerSec?.[sizes[0]] ?? 0) - (a.forwardTokensPerSec?.[sizes[0]] ?? 0))[0];
    if (!best) throw new Error(`bench model: no tfjs backend ran: ${JSON.stringify(backends)}`);
    return {
      bench: 'model',
      model: name,
      architecture: config.architecture,
      layers: config.layers,
      hidden: config.hiddenSize,
      llamaCpp: {
        backend: llamaBackendName(llama),
        threads: Number(o.threads),
        generationTokensPerSec: generation,
        promptTokensPerSec: prompt,
        hotSwapMs,
        rssMB: llamaRssMB,
      },
      tfjs: backends,
      baseline: `llama.cpp (${llamaBackendName(llama)}, ${o.threads} thread) evaluating the same prompt of ${sizes[0]} tokens`,
      /** tfjs forward tokens/s (best backend) ÷ llama.cpp prompt tokens/s, at the first size. */
      ratio: Number(((best.forwardTokensPerSec?.[sizes[0]] ?? 0) / prompt[sizes[0]]).toFixed(3)),
    };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

const ci = process.argv.indexOf('--child');
if (ci >= 0) {
  const [backend, path, tokens, steps] = process.argv.slice(ci + 1);
  const r = await child(backend as BackendName, path, tokens.split(',').map(Number), Number(steps)).catch((err: Error) => ({
    backend,
    available: false,
    error: err.message,
  }));
  process.stdout.write(JSON.stringify(r) + '\n');
  process.exit(0);
}

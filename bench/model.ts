// `turnstream bench model [--json] [--model smollm2-135m] [--tokens 128,256] [--steps 3] [--rounds 3]
// [--backends tensorflow] [--peer torch] [--ttft 1024,4096,8192|none] [--ttft-rounds 1]`: the trainer's LoRA step and scoring pass on the real model,
// against real peers measured in the same run. The step is set against PyTorch + peft on the CPU
// (bench/torch-peer/, the same model, LoRA and optimizer), the two interleaved round by round; the
// scoring pass (tokens/s) against llama.cpp evaluating the same prompt with the same threads. Also
// llama.cpp's generation, the hot swap of an adapter, and each process's peak RSS. Then the
// gateway's time to first token on an agent prompt of each `--ttft` length against bare
// node-llama-cpp, and the prefix cache's second turn (bench/model-ttft.ts). `--model tiny`
// writes a tiny random Llama GGUF for a smoke run.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Token } from 'node-llama-cpp';
import type { BenchArgs } from './options.ts';
import {
  BACKEND_ORDER,
  llamaBackendName,
  llamaConfigOf,
  llamaRuntime,
  loadTfLlama,
  LoraAdapter,
  openGguf,
  selectBackend,
  writeLoraAdapter,
  type BackendName,
} from '../policy/index.ts';
import type { Sample } from '../schemas/index.ts';
import { AdamW, learnerStep, LoraTrainable } from '../trainer/index.ts';
import { resolveOptions, type BenchOptions, type BenchResult } from './options.ts';
import { benchModelFile } from './model-file.ts';
import { measureTtft, type TtftResult } from './model-ttft.ts';
import { median } from './support.ts';
import { ensureTorchPeer, runTorchPeer, type TorchPeerResult } from './torch-peer.ts';

export const description =
  'the LoRA step and scoring pass of the trainer on the real model against PyTorch + peft (interleaved) and llama.cpp prompt evaluation, same threads; generation, hot swap, peak RSS';

export const options: BenchOptions = {
  model: { type: 'string', default: 'smollm2-135m', help: 'model spec (a catalog name, a .gguf path, hf:…), or tiny for a smoke run' },
  tokens: { type: 'string', default: '128,256', help: 'sequence lengths of the step and scoring measurements (half of each the response)' },
  steps: { default: '3', help: 'timed LoRA steps per size, backend and round (after one warm-up)' },
  rounds: { default: '3', help: 'rounds; each runs every tfjs backend, then the peer, in fresh processes' },
  'gen-tokens': { default: '128', help: 'tokens llama.cpp generates per measurement' },
  threads: {
    default: String(availableParallelism()),
    help: 'threads of llama.cpp and of the PyTorch peer (native TensorFlow uses all cores)',
  },
  backends: {
    type: 'list',
    default: 'tensorflow',
    choices: BACKEND_ORDER,
    help: 'tfjs backends to measure (the first is the one compared)',
  },
  peer: {
    type: 'list',
    default: 'torch',
    choices: ['torch', 'none'],
    help: 'the peer of the LoRA step: torch (PyTorch + peft, installed on first use) or none',
  },
  ttft: {
    type: 'string',
    default: '1024,4096,8192',
    help: "prompt lengths (tokens) of the time to first token, the gateway against bare node-llama-cpp, and the second turn at the longest; 'none' skips it",
  },
  'ttft-rounds': { default: '1', help: 'rounds of the time to first token (medians; each round alternates which side goes first)' },
};

/** Tokens each turn of the time-to-first-token part generates: one, so a turn's time is its prompt's evaluation and first token. */
const TTFT_MAX_TOKENS = 1;

/** One tfjs backend in one round. */
interface TfRound {
  backend: string;
  available: boolean;
  error?: string;
  /** Scoring pass (log-probs of the response positions), tokens/s per size. */
  forwardTokensPerSec?: Record<string, number>;
  /** Wall and CPU seconds of each timed LoRA step, per size. */
  stepSeconds?: Record<string, number[]>;
  stepCpuSeconds?: Record<string, number[]>;
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

/** Varied token ids in range (the model's own text is not needed to time it); the peer uses the same. */
const idsOf = (T: number, V: number): number[] => Array.from({ length: T }, (_, i) => (i * 7919 + 13) % Math.min(V, 30_000));

const cpuSeconds = (since: NodeJS.CpuUsage): number => {
  const c = process.cpuUsage(since);
  return (c.user + c.system) / 1e6;
};

async function child(backend: BackendName, path: string, sizes: number[], steps: number): Promise<TfRound> {
  const got = await selectBackend(backend);
  if (got !== backend) return { backend, available: false, error: `not available here (fell back to ${got})` };
  const { model, config } = await loadTfLlama(path);
  const lora = LoraAdapter.init(config, {});
  const policy = new LoraTrainable(model, lora, Math.max(...sizes));
  const opt = new AdamW({ lr: 1e-5 });
  const forward: Record<string, number> = {};
  const wall: Record<string, number[]> = {};
  const cpu: Record<string, number[]> = {};
  for (const T of sizes) {
    const ids = idsOf(T, config.vocabSize);
    const positions = Array.from({ length: T - Math.floor(T / 2) }, (_, i) => Math.floor(T / 2) - 1 + i);
    await model.tokenLogprobs(ids, positions, lora); // warm-up
    let t0 = performance.now();
    await model.tokenLogprobs(ids, positions, lora);
    forward[T] = Math.round((T * 1000) / (performance.now() - t0));
    const items = [{ sample: sampleOf(ids) }];
    await learnerStep(policy, opt, items, { measureAfter: false });
    wall[T] = [];
    cpu[T] = [];
    for (let i = 0; i < steps; i++) {
      const c0 = process.cpuUsage();
      t0 = performance.now();
      await learnerStep(policy, opt, items, { measureAfter: false });
      wall[T].push((performance.now() - t0) / 1000);
      cpu[T].push(cpuSeconds(c0));
    }
  }
  const result: TfRound = {
    backend,
    available: true,
    forwardTokensPerSec: forward,
    stepSeconds: wall,
    stepCpuSeconds: cpu,
    loraParameters: lora.parameterCount,
    peakRssMB: Math.round(process.resourceUsage().maxRSS / 1024),
  };
  lora.dispose();
  model.dispose();
  return result;
}

/** Runs {@link child} in a fresh process (each backend and round starts cold, as a service does). */
function runChild(backend: BackendName, path: string, tokens: string, steps: string): Promise<TfRound> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--child', backend, path, tokens, steps], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
    p.once('close', (code) => {
      try {
        resolve(JSON.parse(out.trim().split('\n').pop() ?? '') as TfRound);
      } catch {
        resolve({ backend, available: false, error: (err || `exit ${code}`).trim().split('\n').slice(-1)[0].slice(0, 300) });
      }
    });
  });
}

const round3 = (x: number): number => Number(x.toFixed(3));
const medians = (bySize: Record<string, number[]>): Record<string, number> =>
  Object.fromEntries(Object.entries(bySize).map(([k, v]) => [k, round3(median(v))]));

/** Per size, every round's values pooled. */
function pool(rounds: Array<Record<string, number[]> | undefined>): Record<string, number[]> {
  const out: Record<string, number[]> = {};
  for (const r of rounds) for (const [k, v] of Object.entries(r ?? {})) (out[k] ??= []).push(...v);
  return out;
}

/** llama.cpp on the same file: prompt tokens/s per size (the scoring pass's peer), generation, a hot swap. */
async function measureLlamaCpp(path: string, sizes: number[], threads: number, genTokens: number, tmp: string) {
  const llama = await llamaRuntime();
  const lm = await llama.loadModel({ modelPath: path });
  const ctx = await lm.createContext({ contextSize: Math.max(...sizes) * 2 + genTokens + 64, threads });
  const seq = ctx.getSequence();
  const V = (lm.fileInfo.metadata.tokenizer?.ggml?.tokens as unknown[] | undefined)?.length ?? 256;
  const rssMB = Math.round(process.memoryUsage().rss / 2 ** 20);
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

  // A hot swap: a new context with an adapter of the default LoRA shape (small values).
  const file = await openGguf(path);
  const config = llamaConfigOf(file);
  await file.close();
  const shapes = LoraAdapter.init(config, {});
  const pairs = (await shapes.toPairs()).map((p) => ({ ...p, b: p.b.map((_, i) => ((i % 7) - 3) * 1e-3) }));
  shapes.dispose();
  const adapterPath = join(tmp, 'adapter.gguf');
  await writeLoraAdapter(adapterPath, { architecture: file.architecture, alpha: 16, pairs });
  const s0 = performance.now();
  const swapped = await lm.createContext({ contextSize: 512, threads, lora: { adapters: [{ filePath: adapterPath, scale: 1 }] } });
  const hotSwapMs = Number((performance.now() - s0).toFixed(1));
  await swapped.dispose();
  await ctx.dispose();
  await lm.dispose();
  return {
    backend: llamaBackendName(llama),
    threads,
    promptTokensPerSec: prompt,
    generationTokensPerSec: generation,
    hotSwapMs,
    rssMB,
    config,
  };
}

/** The sizes of the step and scoring measurements and of the time to first token (none with `--ttft none`), checked. */
function sizesOf(o: Record<string, string>): { sizes: number[]; ttftSizes: number[] } {
  const sizes = o.tokens.split(',').map(Number);
  if (sizes.some((n) => !Number.isInteger(n) || n < 8)) throw new Error('--tokens: whole numbers ≥ 8, comma-separated');
  const ttftSizes = o.ttft === 'none' ? [] : o.ttft.split(',').map(Number);
  if (ttftSizes.some((n) => !Number.isInteger(n) || n < 32)) throw new Error("--ttft: whole numbers ≥ 32, comma-separated, or 'none'");
  return { sizes, ttftSizes };
}

/** Every round: each tfjs backend in a fresh process, then the PyTorch peer (with a `python`). */
async function measureRounds(
  args: BenchArgs,
  r: { rounds: number; backends: BackendName[]; path: string; tokens: string; steps: string; sizes: number[]; threads: number },
  python: string | null,
): Promise<{ tfRounds: TfRound[]; peerRounds: TorchPeerResult[] }> {
  const tfRounds: TfRound[] = [];
  const peerRounds: TorchPeerResult[] = [];
  for (let i = 0; i < r.rounds; i++) {
    for (const b of r.backends) {
      args.progress(`bench model: round ${i + 1}, tfjs ${b} …`);
      tfRounds.push(await runChild(b, r.path, r.tokens, r.steps));
    }
    if (python) {
      args.progress(`bench model: round ${i + 1}, PyTorch + peft …`);
      peerRounds.push(await runTorchPeer({ python, modelPath: r.path, tokens: r.sizes, steps: Number(r.steps), threads: r.threads }));
    }
  }
  return { tfRounds, peerRounds };
}

/** One value per size as a list of one, for {@link pool}. */
const listed = (bySize: Record<string, number>): Record<string, number[]> =>
  Object.fromEntries(Object.entries(bySize).map(([k, v]) => [k, [v]]));

/** A tfjs backend over the rounds it ran in: medians, or why it did not run. */
function backendSummary(b: BackendName, tfRounds: TfRound[]) {
  const rs = tfRounds.filter((t) => t.backend === b && t.available);
  if (rs.length === 0) return { backend: b, available: false, error: tfRounds.find((t) => t.backend === b)?.error };
  return {
    backend: b,
    available: true,
    lora_step_s: medians(pool(rs.map((t) => t.stepSeconds))),
    lora_step_cpu_s: medians(pool(rs.map((t) => t.stepCpuSeconds))),
    forward_tokens_per_s: medians(pool(rs.map((t) => listed(t.forwardTokensPerSec ?? {})))),
    lora_parameters: rs[0].loraParameters,
    peak_rss_mb: Math.max(...rs.map((t) => t.peakRssMB ?? 0)),
  };
}

/** The PyTorch peer over its rounds: medians (null without a peer). */
function peerSummary(peerRounds: TorchPeerResult[]) {
  if (!peerRounds.length) return null;
  return {
    name: peerRounds[0].name,
    threads: peerRounds[0].threads,
    weights: peerRounds[0].weights,
    lora_parameters: peerRounds[0].lora_parameters,
    lora_step_s: medians(pool(peerRounds.map((p) => listed(p.lora_step_s)))),
    lora_step_cpu_s: medians(pool(peerRounds.map((p) => listed(p.lora_step_cpu_s)))),
    forward_tokens_per_s: medians(pool(peerRounds.map((p) => listed(p.forward_tokens_per_s)))),
    peak_rss_mb: Math.max(...peerRounds.map((p) => p.peak_rss_mb)),
    per_round: peerRounds.map((p) => p.lora_step_s),
  };
}

export async function run(args: BenchArgs): Promise<BenchResult & Record<string, unknown>> {
  const o = resolveOptions(options, args.options);
  const { sizes, ttftSizes } = sizesOf(o);
  const threads = Number(o.threads);
  const backends = o.backends.split(',') as BackendName[];
  const withPeer = o.peer === 'torch';
  const tmp = await mkdtemp(join(tmpdir(), 'bench-model-'));
  try {
    const { path, name, sha256 } = await benchModelFile(
      args.config,
      o.model,
      Math.max(...sizes, ...ttftSizes.map((n) => n + 256)) + 16,
      tmp,
    );
    args.progress(`bench model: llama.cpp on ${name} …`);
    const { config, ...llamaCpp } = await measureLlamaCpp(path, sizes, threads, Number(o['gen-tokens']), tmp);
    const python = withPeer
      ? await ensureTorchPeer({ home: args.config.home, onProgress: (l) => args.progress(`torch peer: ${l}`) })
      : null;

    const rounds = { rounds: Number(o.rounds), backends, path, tokens: o.tokens, steps: o.steps, sizes, threads };
    const { tfRounds, peerRounds } = await measureRounds(args, rounds, python);
    const perBackend = backends.map((b) => backendSummary(b, tfRounds));
    const first = perBackend[0];
    if (!('lora_step_s' in first)) throw new Error(`bench model: tfjs ${backends[0]} did not run: ${first.error}`);
    const main = first as Extract<(typeof perBackend)[number], { lora_step_s: Record<string, number> }>;
    const peer = peerSummary(peerRounds);
    const ratioStep = peer ? Object.fromEntries(sizes.map((T) => [T, round3(main.lora_step_s[T] / peer.lora_step_s[T])])) : null;
    const ratioForward = Object.fromEntries(sizes.map((T) => [T, round3(main.forward_tokens_per_s[T] / llamaCpp.promptTokensPerSec[T])]));
    const ttft: TtftResult | null = ttftSizes.length
      ? await measureTtft({
          settings: args.config,
          model: { name, path, sha256 },
          sizes: ttftSizes,
          threads,
          rounds: Number(o['ttft-rounds']),
          maxTokens: TTFT_MAX_TOKENS,
          dir: join(tmp, 'ttft'),
          progress: args.progress,
        })
      : null;
    return {
      bench: 'model',
      model: name,
      architecture: config.architecture,
      layers: config.layers,
      hidden: config.hiddenSize,
      backend: backends[0],
      rounds: Number(o.rounds),
      steps: Number(o.steps),
      lora_step_s: main.lora_step_s,
      lora_step_cpu_s: main.lora_step_cpu_s,
      forward_tokens_per_s: main.forward_tokens_per_s,
      peak_rss_mb: main.peak_rss_mb,
      lora_parameters: main.lora_parameters,
      tfjs: perBackend,
      tfjs_per_round: tfRounds.map((t) => ({ backend: t.backend, lora_step_s: t.stepSeconds ? medians(t.stepSeconds) : null })),
      peer,
      ratio_step: ratioStep,
      llama_cpp: llamaCpp,
      ratio_forward: ratioForward,
      /** Time to first token of an agent prompt: the gateway against bare node-llama-cpp (null with --ttft none). */
      ...(ttft ?? { ttft_s: null, peer_ttft_s: null, ratio_ttft: null }),
      baseline: peer
        ? `${peer.name}, ${peer.threads} threads, the same LoRA step interleaved in the same run; llama.cpp (${llamaCpp.backend}, ${threads} threads) evaluating the same prompts`
        : `llama.cpp (${llamaCpp.backend}, ${threads} threads) evaluating the same prompts`,
      /** The LoRA step: turnstream's seconds ÷ the peer's at the first size (lower is better); without a peer, the scoring pass ÷ llama.cpp's prompt evaluation. */
      ratio: ratioStep ? ratioStep[sizes[0]] : ratioForward[sizes[0]],
    };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

const ci = process.argv.indexOf('--child');
if (ci >= 0) {
  const [backend, path, tokens, steps] = process.argv.slice(ci + 1);
  const r = await child(backend as BackendName, path, tokens.split(',').map(Number), Number(steps)).catch((err: Error): TfRound => ({
    backend,
    available: false,
    error: err.message,
  }));
  process.stdout.write(JSON.stringify(r) + '\n');
  process.exit(0);
}

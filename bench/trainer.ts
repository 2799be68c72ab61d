// `turnstream bench trainer [--json] [--steps 3] [--batch 16] [--backends wasm,cpu]`: learner
// training steps (π_old recompute + PPO/OPD forward/backward + AdamW + the after-step KL pass)
// on realistic samples from the pretraining corpus, at the shipped base model's shape, for each
// tfjs backend available here, side by side. Each backend runs in its own process.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { BenchArgs } from './options.ts';
import { resolveOptions, type BenchOptions, type BenchResult } from './options.ts';
import type { Sample } from '../schemas/index.ts';
import { BACKEND_ORDER, ByteTokenizer, renderPrompt, selectBackend, TransformerModel, type BackendName } from '../policy/index.ts';
import { AdamW, BASE_MODEL_CONFIG, corpus, exchangeIds, learnerStep } from '../trainer/index.ts';

export const description =
  'learner steps per second on each tfjs backend available here; the backend turnstream picks against the pure-JS cpu backend';

export const options: BenchOptions = {
  steps: { default: '3', help: 'timed learner steps per backend (after one warm-up step)' },
  batch: { default: '16', help: 'samples per step' },
  backends: {
    type: 'list',
    default: BACKEND_ORDER.join(','),
    choices: BACKEND_ORDER,
    help: 'backends to measure, in order of preference (cpu, the baseline, is always measured)',
  },
};

interface BackendResult {
  backend: BackendName;
  available: boolean;
  error?: string;
  stepMs?: number;
  samplesPerSec?: number;
  /** Trained (response) tokens per second. */
  tokensPerSec?: number;
  /** All positions (prompt + response) run through the model per second. */
  positionsPerSec?: number;
}

function samples(n: number): Sample[] {
  const tok = new ByteTokenizer();
  const it = corpus({ seed: 7 });
  const out: Sample[] = [];
  while (out.length < n) {
    const ex = it.next().value!;
    const prompt = renderPrompt(tok, ex.messages, { maxPromptTokens: 10_000 }).ids;
    const all = exchangeIds(tok, ex.messages, ex.reply);
    if (all.length > BASE_MODEL_CONFIG.contextLength) continue;
    const R = all.length - prompt.length;
    const i = out.length;
    out.push({
      sampleId: `b${i}`,
      turnId: `b${i}`,
      sessionId: `s${i}`,
      userId: `u${i % 5}`,
      policyModelId: 'turnstream-tiny',
      policyVersion: 0,
      method: 'COMBINED',
      tokens: all,
      promptLength: prompt.length,
      responseLength: R,
      lossMask: new Array(R).fill(1),
      rolloutLogprobs: new Array(R).fill(-1),
      exactLogprobs: true,
      teacherPromptTokens: null,
      reward: i % 2 ? 1 : -1,
      teacherLogprobs: i % 2 ? new Array(R).fill(-0.8) : null,
      teacherTopK: null,
      weight: 1,
      judgeId: 'bench',
      createdAt: 0,
      tag: null,
    });
  }
  return out;
}

async function child(backend: BackendName, steps: number, batch: number): Promise<BackendResult> {
  const got = await selectBackend(backend);
  if (got !== backend) return { backend, available: false, error: `not available here (selectBackend fell back to ${got})` };
  const model = TransformerModel.init({ ...BASE_MODEL_CONFIG, vocabSize: new ByteTokenizer().vocabSize }, 0);
  const opt = new AdamW({ lr: 1e-4 });
  const items = samples(batch).map((sample) => ({ sample }));
  await learnerStep(model, opt, items); // warm-up: kernels, wasm init
  let tokens = 0;
  const t0 = performance.now();
  for (let i = 0; i < steps; i++) tokens += (await learnerStep(model, opt, items)).tokens;
  const ms = (performance.now() - t0) / steps;
  const positions = items.reduce((a, { sample }) => a + sample.tokens.length - 1, 0);
  model.dispose();
  return {
    backend,
    available: true,
    stepMs: Math.round(ms),
    samplesPerSec: (batch * 1000) / ms,
    tokensPerSec: (tokens / steps) * (1000 / ms),
    positionsPerSec: (positions * 1000) / ms,
  };
}

export async function run(args: BenchArgs): Promise<BenchResult & Record<string, unknown>> {
  const o = resolveOptions(options, args.options);
  const steps = Number(o.steps);
  const batch = Number(o.batch);
  const wanted = o.backends.split(',') as BackendName[];
  const backends = wanted.includes('cpu') ? wanted : [...wanted, 'cpu' as const];
  const results: BackendResult[] = [];
  for (const b of backends) {
    args.progress(`bench trainer: ${b} …`);
    const p = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--child', b, String(steps), String(batch)], {
      encoding: 'utf8',
      timeout: 600_000,
    });
    const line = p.stdout.trim().split('\n').pop() ?? '';
    try {
      results.push(JSON.parse(line) as BackendResult);
    } catch {
      results.push({ backend: b, available: false, error: (p.stderr || `exit ${p.status}`).trim().split('\n').slice(-1)[0] });
    }
  }
  const ok = results.filter((r) => r.available);
  const fastest = [...ok].sort((a, b) => (b.samplesPerSec ?? 0) - (a.samplesPerSec ?? 0))[0]?.backend ?? null;
  // What turnstream would pick: the first available backend in order of preference.
  const picked = ok.find((r) => wanted.includes(r.backend)) ?? null;
  const cpu = ok.find((r) => r.backend === 'cpu');
  if (!picked || !cpu) throw new Error(`bench trainer: the cpu baseline or the picked backend did not run: ${JSON.stringify(results)}`);
  return {
    bench: 'trainer',
    model: { ...BASE_MODEL_CONFIG },
    batch,
    steps,
    meanTokensPerSample: Math.round(samples(batch).reduce((a, s) => a + s.tokens.length, 0) / batch),
    backends: results,
    fastest,
    picked: picked.backend,
    baseline: 'the pure-JS cpu backend, same samples and steps',
    /** samples/s of the picked backend ÷ the cpu backend's. */
    ratio: Number(((picked.samplesPerSec ?? 0) / (cpu.samplesPerSec ?? 1)).toFixed(3)),
  };
}

const i = process.argv.indexOf('--child');
if (i >= 0) {
  const r = await child(process.argv[i + 1] as BackendName, Number(process.argv[i + 2]), Number(process.argv[i + 3])).catch(
    (err: Error) => ({ backend: process.argv[i + 1], available: false, error: err.message }),
  );
  process.stdout.write(JSON.stringify(r) + '\n');
  process.exit(0);
}

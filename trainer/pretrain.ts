/**
 * Pretraining of the base checkpoint (version 0) on the generated corpus (corpus.ts): next-token
 * cross-entropy over every token of each exchange, AdamW with warm-up and cosine decay, batches
 * of similar length (little padding). Stops at `maxSteps` or when the time budget is spent, and
 * plans its learning-rate schedule from the measured speed of the first steps.
 */
import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { AdamW } from './adamw.ts';
import {
  renderPrompt,
  type ChatMessage,
  loadCheckpoint,
  saveCheckpoint,
  type SavedCheckpoint,
  generate,
  TransformerModel,
  type ModelConfig,
  ByteTokenizer,
} from '../policy/index.ts';
import { corpus, type CorpusOptions } from './corpus.ts';

/** The shape of the shipped base model: small enough to pretrain on two CPU cores in minutes. */
export const BASE_MODEL_CONFIG: Omit<ModelConfig, 'vocabSize'> = {
  contextLength: 192,
  dModel: 64,
  nLayers: 2,
  nHeads: 4,
  dFf: 256,
  tiedEmbeddings: true,
};

export interface PretrainOptions {
  /** Weight store root; the result is `<weightsDir>/<modelId>/v0`. */
  weightsDir: string;
  /** @default 'turnstream-tiny' */
  modelId?: string;
  /** @default BASE_MODEL_CONFIG */
  config?: Partial<Omit<ModelConfig, 'vocabSize'>>;
  /** Continue from this checkpoint folder instead of a random init (its config wins). */
  from?: string;
  /** Corpus and init seed. @default 0 */
  seed?: number;
  /** @default 16 */
  batchSize?: number;
  /** Peak learning rate. @default 3e-3 */
  lr?: number;
  /** @default 3000 */
  maxSteps?: number;
  /** Time budget in minutes; the schedule is fitted to it. @default 12 */
  maxMinutes?: number;
  /** Loss curve CSV (`step,seconds,loss,lr`). @default none */
  lossCsv?: string;
  /** Corpus options besides the seed (e.g. a name-copy drill). @default none */
  corpus?: Omit<CorpusOptions, 'seed'>;
  /** Progress callback, every `logEvery` steps. */
  onProgress?: (p: { step: number; totalSteps: number; seconds: number; loss: number; lr: number }) => void;
  /** @default 10 */
  logEvery?: number;
}

export interface PretrainResult {
  checkpoint: SavedCheckpoint;
  steps: number;
  seconds: number;
  /** Mean loss of the first and last 20 steps (nats per token). */
  firstLoss: number;
  finalLoss: number;
  tokens: number;
}

/** Token ids of an exchange: the rendered prompt, the reply bytes, `<|end|>`. */
export function exchangeIds(tok: ByteTokenizer, messages: ChatMessage[], reply: string): number[] {
  return [...renderPrompt(tok, messages, { maxPromptTokens: 10_000 }).ids, ...tok.encode(reply), tok.end];
}

export async function pretrain(opts: PretrainOptions): Promise<PretrainResult> {
  const tok = new ByteTokenizer();
  const seed = opts.seed ?? 0;
  const B = opts.batchSize ?? 16;
  const peak = opts.lr ?? 3e-3;
  const maxSteps = opts.maxSteps ?? 3000;
  const budgetS = (opts.maxMinutes ?? 12) * 60;
  const model = opts.from
    ? (await loadCheckpoint(opts.from)).model
    : TransformerModel.init({ ...BASE_MODEL_CONFIG, ...opts.config, vocabSize: tok.vocabSize }, seed);
  const config = model.config;
  const opt = new AdamW({ lr: peak, weightDecay: 0.01, maxGradNorm: 1 });
  const stream = corpus({ ...opts.corpus, seed });
  if (opts.lossCsv) {
    await mkdir(dirname(opts.lossCsv), { recursive: true });
    await writeFile(opts.lossCsv, 'step,seconds,loss,lr\n');
  }

  // A pool of exchanges sorted by length, cut into batches, refilled when used up.
  let queue: number[][][] = [];
  const refill = (): void => {
    const pool: number[][] = [];
    while (pool.length < B * 32) {
      const ex = stream.next().value!;
      const ids = exchangeIds(tok, ex.messages, ex.reply);
      if (ids.length <= config.contextLength + 1) pool.push(ids);
    }
    pool.sort((a, b) => a.length - b.length);
    const batches: number[][][] = [];
    for (let i = 0; i < pool.length; i += B) batches.push(pool.slice(i, i + B));
    for (let i = batches.length - 1; i > 0; i--) {
      const j = Math.floor(((i * 7919 + seed) % (i + 1)) as number);
      [batches[i], batches[j]] = [batches[j], batches[i]];
    }
    queue = batches;
  };

  const t0 = performance.now();
  let totalSteps = maxSteps;
  const losses: number[] = [];
  let tokens = 0;
  let step = 0;
  for (; step < totalSteps; step++) {
    if (queue.length === 0) refill();
    const batch = queue.pop()!;
    const T = Math.max(...batch.map((s) => s.length)) - 1;
    const input: number[][] = [];
    const target: number[][] = [];
    const mask: number[][] = [];
    for (const s of batch) {
      const pad = T + 1 - s.length;
      const full = [...s, ...new Array<number>(pad).fill(tok.pad)];
      input.push(full.slice(0, T));
      target.push(full.slice(1));
      mask.push(full.slice(1).map((_, i) => (i < s.length - 1 ? 1 : 0)));
      tokens += s.length - 1;
    }
    const warm = 20;
    const lr =
      step < warm
        ? (peak * (step + 1)) / warm
        : peak * (0.1 + 0.45 * (1 + Math.cos((Math.PI * (step - warm)) / Math.max(1, totalSteps - warm))));
    const x = tf.tensor2d(input, undefined, 'int32');
    const y = tf.tensor2d(target, undefined, 'int32');
    const m = tf.tensor2d(mask, undefined, 'float32');
    const { value, grads } = tf.variableGrads(() => {
      const lp = model.tokenLogprobs(x, y, m);
      return tf.div(tf.neg(tf.sum(lp)), tf.sum(m)) as tf.Scalar;
    }, model.variables);
    opt.apply(model.variables, grads, lr);
    const loss = (await value.data())[0];
    tf.dispose([x, y, m, value, ...Object.values(grads)]);
    losses.push(loss);
    const seconds = (performance.now() - t0) / 1000;
    if (step === 9) totalSteps = Math.min(maxSteps, Math.floor((budgetS / seconds) * 10));
    if (opts.lossCsv) await appendFile(opts.lossCsv, `${step + 1},${seconds.toFixed(1)},${loss.toFixed(4)},${lr.toExponential(3)}\n`);
    if ((step + 1) % (opts.logEvery ?? 10) === 0) opts.onProgress?.({ step: step + 1, totalSteps, seconds, loss, lr });
    if (seconds > budgetS * 1.05) {
      step++;
      break;
    }
  }
  const seconds = (performance.now() - t0) / 1000;
  const mean = (a: number[]): number => a.reduce((x, y) => x + y, 0) / Math.max(1, a.length);
  const firstLoss = mean(losses.slice(0, 20));
  const finalLoss = mean(losses.slice(-20));
  opt.dispose();
  try {
    const checkpoint = await saveCheckpoint(model, {
      weightsDir: opts.weightsDir,
      modelId: opts.modelId ?? 'turnstream-tiny',
      version: 0,
      baseModel: `turnstream-pretrain(seed=${seed},steps=${step},batch=${B},lr=${peak}${opts.from ? ',continued' : ''})`,
      metrics: { loss: finalLoss, steps: step, tokens, seconds: Math.round(seconds) },
    });
    return { checkpoint, steps: step, seconds, firstLoss, finalLoss, tokens };
  } finally {
    model.dispose();
  }
}

/** A few generations of a model, for a pretraining report. */
export async function sampleReplies(
  model: TransformerModel,
  prompts: ChatMessage[][],
  opts: { temperature?: number; seed?: number } = {},
): Promise<string[]> {
  const tok = new ByteTokenizer();
  const out: string[] = [];
  for (const [i, messages] of prompts.entries()) {
    const ids = renderPrompt(tok, messages, { maxPromptTokens: Math.floor(model.config.contextLength * 0.6) }).ids;
    let text = '';
    for await (const t of generate(model, ids, { maxTokens: 120, temperature: opts.temperature ?? 0.7, seed: (opts.seed ?? 0) + i }))
      text += t.text;
    out.push(text);
  }
  return out;
}

/** The loss curve (`step,seconds,loss,lr` rows) as a small SVG line chart, raw and smoothed. */
export function lossCurveSvg(rows: Array<{ step: number; loss: number }>, title = 'pretraining loss (nats / token)'): string {
  const W = 640;
  const H = 360;
  const m = { l: 50, r: 20, t: 40, b: 40 };
  const maxX = Math.max(1, ...rows.map((r) => r.step));
  const maxY = Math.ceil(Math.max(1, ...rows.map((r) => r.loss)));
  const x = (v: number): number => m.l + (v / maxX) * (W - m.l - m.r);
  const y = (v: number): number => m.t + (1 - v / maxY) * (H - m.t - m.b);
  const line = (pts: Array<{ step: number; loss: number }>): string =>
    pts.map((p, i) => `${i ? 'L' : 'M'}${x(p.step).toFixed(1)},${y(p.loss).toFixed(1)}`).join(' ');
  const smooth = rows.map((r, i) => {
    const w = rows.slice(Math.max(0, i - 19), i + 1);
    return { step: r.step, loss: w.reduce((a, b) => a + b.loss, 0) / w.length };
  });
  const ticks = Array.from(
    { length: maxY + 1 },
    (_, v) =>
      `<line x1="${m.l}" x2="${W - m.r}" y1="${y(v)}" y2="${y(v)}" stroke="#eee"/><text x="${m.l - 6}" y="${y(v) + 4}" text-anchor="end">${v}</text>`,
  ).join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12"><rect width="${W}" height="${H}" fill="white"/>${ticks}<text x="${m.l}" y="24" font-size="14" font-weight="bold">${title}</text><path d="${line(rows)}" fill="none" stroke="#9ecae1"/><path d="${line(smooth)}" fill="none" stroke="#08519c" stroke-width="2"/><text x="${W / 2}" y="${H - 8}" text-anchor="middle">step (${rows.length} steps; dark: mean of the last 20)</text></svg>\n`;
}

/**
 * Shared helpers of the learner's integration tests: the tiny built-in model, RL samples of the
 * byte tokenizer, the versions a learner published, and `turnstream train` as a child process.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { ByteTokenizer, initCheckpoint } from '../../../policy/index.ts';
import type { Sample, WeightVersion } from '../../../schemas/index.ts';
import { rlSample } from '../../support/rl-sample.ts';
import { ensureStack, REPO_ROOT } from '../../support/stack.ts';
import { readAll, type Family } from '../../support/topic-family.ts';

/** The tiny built-in model these tests train: a step takes well under a second on a CPU. */
export const TINY = { contextLength: 48, dModel: 16, nLayers: 1, nHeads: 2, dFf: 32 };

const tok = new ByteTokenizer();

/**
 * RL sample `id` (`id:RL` of turn `id`): `ask` as the user's turn, `reply` as the response, every
 * response token in the loss with recorded log-prob -5; `over` sets the rest (session, user, reward).
 */
export function chatSample(id: string, ask: string, reply: string, over: Partial<Sample>): Sample {
  const prompt = [tok.bos, tok.user, ...tok.encode(ask), tok.end, tok.assistant];
  return rlSample(prompt, [...tok.encode(reply), tok.end], -5, { sampleId: `${id}:RL`, turnId: id, exactLogprobs: true, ...over });
}

/** Sample `i` of the yes/no task: turn `t{i}` asks `q{i}`, odd ones answered 'yes' (reward 1), even ones 'no' (reward -1). */
export function yesNoSample(i: number, over: Pick<Sample, 'sessionId' | 'userId'>): Sample {
  return chatSample(`t${i}`, `q${i}`, i % 2 ? 'yes' : 'no', { reward: i % 2 ? 1 : -1, ...over });
}

/** Every version published on the family's weights topic, in version order. */
export async function publishedVersions(f: Pick<Family, 'kafka' | 'codecs'>): Promise<WeightVersion[]> {
  return (await readAll(f, 'weights', { idleMs: 500 })).sort((a, b) => a.version - b.version);
}

/** Versions 1..n, each once, each on its predecessor, `samples` trained in all. */
export function assertExactlyOnce(all: WeightVersion[], samples: number): void {
  const n = all.length;
  assert.deepEqual(
    all.map((v) => v.version),
    Array.from({ length: n }, (_, i) => i + 1),
    'versions 1..n, each once',
  );
  assert.deepEqual(
    all.map((v) => v.parentVersion),
    Array.from({ length: n }, (_, i) => i),
    'each trained on its predecessor',
  );
  assert.equal(
    all.reduce((a, v) => a + v.metrics.samples, 0),
    samples,
    'every sample trained exactly once',
  );
}

/** Folder `name` under `parent`, made, with version 0 of the tiny model in it (`config` other than TINY where given). */
export async function tinyCheckpoint(parent: string, name: string, config = TINY): Promise<string> {
  const weightsDir = join(parent, name);
  await mkdir(weightsDir, { recursive: true });
  await initCheckpoint(weightsDir, { config });
  return weightsDir;
}

/**
 * `turnstream train --backend cpu` on the family's topics, training the built-in model in
 * `weightsDir` in batches of 4 (due after 1.5 s, staleness up to 100 versions); `env` adds to
 * (or overrides) that.
 */
export async function spawnTrain(f: Pick<Family, 'prefix'>, weightsDir: string, env: Record<string, string> = {}): Promise<ChildProcess> {
  const stack = await ensureStack();
  return spawn(process.execPath, ['bin/turnstream.js', 'train', '--backend', 'cpu'], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      KAFKA_BROKERS: stack.brokers,
      SCHEMA_REGISTRY_URL: stack.registryUrl,
      TURNSTREAM_TOPIC_PREFIX: f.prefix,
      TURNSTREAM_WEIGHTS_DIR: weightsDir,
      // The tiny built-in checkpoint the test writes, not the default real model.
      TURNSTREAM_MODEL: 'builtin',
      TRAIN_BATCH_SIZE: '4',
      TRAIN_MAX_WAIT_MS: '1500',
      TRAIN_MAX_STALENESS: '100',
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

/** Sends `signal` to `child` and resolves once it has exited. */
export async function stopChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill(signal);
  await exited;
}

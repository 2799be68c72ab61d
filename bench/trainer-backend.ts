// Compares tfjs backends for the built-in model: generation tokens/s (KV cache, batch 1) and
// training steps/s (forward + backward + Adam on a batch). Each backend runs in its own process.
//   node --import tsx bench/trainer-backend.ts [--json] [--backends wasm,cpu] [--tokens 64]
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs';
import { selectBackend, type BackendName, generate, TransformerModel, ByteTokenizer } from '../policy/index.ts';

interface Result {
  backend: BackendName;
  generateTokensPerSec: number;
  prefillMs: number;
  trainStepMs: number;
  trainBatch: [number, number];
}

const arg = (name: string, dflt: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : dflt;
};

async function measure(backend: BackendName, tokens: number): Promise<Result> {
  const got = await selectBackend(backend);
  if (got !== backend) throw new Error(`backend ${backend} unavailable (got ${got})`);
  const tok = new ByteTokenizer();
  const model = TransformerModel.init({ vocabSize: tok.vocabSize }, 0);
  const prompt = [tok.bos, tok.user, ...tok.encode('Tell me something about streams.'), tok.end, tok.assistant];
  const run = async (n: number): Promise<{ ms: number; count: number; firstMs: number }> => {
    const t0 = performance.now();
    let count = 0;
    let firstMs = 0;
    // Greedy over a fixed-temperature bias-free model may hit <|end|> early; sample with a seed
    // and count what came out.
    for await (const _ of generate(model, prompt, { maxTokens: n, seed: 1, temperature: 1 })) {
      if (count++ === 0) firstMs = performance.now() - t0;
    }
    return { ms: performance.now() - t0, count, firstMs };
  };
  await run(8); // warm-up (kernel compilation, wasm init)
  const r = await run(tokens);

  const B = 8;
  const T = 128;
  const ids = tf.randomUniform([B, T], 0, 256, 'int32') as tf.Tensor2D;
  const mask = tf.ones([B, T]) as tf.Tensor2D;
  const opt = tf.train.adam(1e-3);
  const step = (): void =>
    tf.tidy(() => {
      opt.minimize(() => tf.neg(tf.mean(model.tokenLogprobs(ids, ids, mask))) as tf.Scalar, false, model.variables);
    });
  step();
  const steps = 3;
  const t0 = performance.now();
  for (let i = 0; i < steps; i++) step();
  const trainStepMs = (performance.now() - t0) / steps;
  model.dispose();
  return {
    backend,
    generateTokensPerSec: (r.count / r.ms) * 1000,
    prefillMs: r.firstMs,
    trainStepMs,
    trainBatch: [B, T],
  };
}

const child = arg('child', '');
if (child) {
  const res = await measure(child as BackendName, Number(arg('tokens', '64')));
  process.stdout.write(JSON.stringify(res) + '\n');
} else {
  const backends = arg('backends', 'wasm,cpu').split(',') as BackendName[];
  const results: Result[] = [];
  for (const b of backends) {
    const p = spawnSync(
      process.execPath,
      ['--import', 'tsx', fileURLToPath(import.meta.url), '--child', b, '--tokens', arg('tokens', '64')],
      { encoding: 'utf8' },
    );
    const line = p.stdout.trim().split('\n').at(-1) ?? '';
    if (p.status !== 0 || !line.startsWith('{')) {
      process.stderr.write(`${b}: failed\n${p.stderr}\n`);
      continue;
    }
    results.push(JSON.parse(line) as Result);
  }
  if (process.argv.includes('--json')) process.stdout.write(JSON.stringify(results, null, 2) + '\n');
  else
    for (const r of results)
      console.log(
        `${r.backend.padEnd(8)} generate ${r.generateTokensPerSec.toFixed(1)} tok/s (first token ${r.prefillMs.toFixed(0)} ms)  ` +
          `train step [${r.trainBatch}] ${r.trainStepMs.toFixed(0)} ms`,
      );
}

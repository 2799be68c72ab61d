/**
 * The PyTorch + peft peer of `bench model`, for real: its virtualenv is installed from the pinned
 * requirements (minutes and several GB the first time, then reused through the stamp) and it runs
 * the LoRA step on a tiny random llama GGUF, through transformers' GGUF loader and through random
 * weights of the header's shapes. (No timing is asserted: figures are measured, not tested.)
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { ensureTorchPeer, runTorchPeer, type TorchPeerResult } from '../../../bench/torch-peer.ts';
import { writeTinyModel, type TinyModel } from '../../../policy/index.ts';

type TinyModelConfig = TinyModel['config'];

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const RANK = 8;

/** LoRA rank 8 on q/k/v/o of every layer: r·(in + out) for each. */
function loraParameters(c: TinyModelConfig): number {
  const q = c.heads * c.headDim;
  const kv = c.kvHeads * c.headDim;
  const perLayer = RANK * (c.hidden + q) + 2 * RANK * (c.hidden + kv) + RANK * (q + c.hidden);
  return c.layers * perLayer;
}

function assertFigures(r: TorchPeerResult, tokens: number): void {
  const key = String(tokens);
  assert.ok(r.lora_step_s[key] > 0, `a positive step time: ${JSON.stringify(r.lora_step_s)}`);
  assert.ok(r.lora_step_cpu_s[key] > 0, `a positive step CPU time: ${JSON.stringify(r.lora_step_cpu_s)}`);
  assert.ok(r.forward_tokens_per_s[key] > 0, `a positive forward rate: ${JSON.stringify(r.forward_tokens_per_s)}`);
  assert.ok(r.peak_rss_mb > 0);
  assert.ok(r.threads >= 1);
  assert.equal(r.steps, 1);
  assert.match(r.name, /^pytorch \S+ \+ peft \S+ \(cpu\)$/);
  assert.ok(r.name.includes(r.torch) && r.name.includes(r.peft));
  assert.match(r.transformers, /^\d+\.\d+/);
}

describe('torch peer', { timeout: 30 * 60_000 }, () => {
  let dir: string;
  let modelPath: string;
  let config: TinyModelConfig;
  let python: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'torch-peer-'));
    const tiny = await writeTinyModel(join(dir, 'tiny.gguf'), { architecture: 'llama', contextLength: 512 });
    modelPath = tiny.path;
    config = tiny.config;
    const lines: string[] = [];
    python = await ensureTorchPeer({ home: join(ROOT, '.turnstream'), onProgress: (l) => lines.push(l) });
    assert.ok(existsSync(python), `the venv's python is there: ${python}\n${lines.slice(-10).join('\n')}`);
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('a second ensure reuses the installed venv at once', async () => {
    const lines: string[] = [];
    const t0 = performance.now();
    assert.equal(await ensureTorchPeer({ home: join(ROOT, '.turnstream'), onProgress: (l) => lines.push(l) }), python);
    assert.deepEqual(lines, [], 'nothing installed');
    assert.ok(performance.now() - t0 < 5_000);
  });

  it("runs the LoRA step on the tiny model's own weights, dequantized by transformers", async () => {
    const r = await runTorchPeer({ python, modelPath, tokens: [16], steps: 1 });
    assert.equal(r.weights, 'gguf-dequantized');
    assert.equal(r.lora_parameters, loraParameters(config));
    assertFigures(r, 16);
  });

  it('runs it on random weights of the shapes in the header, on the threads asked for', async () => {
    const r = await runTorchPeer({ python, modelPath, tokens: [16], steps: 1, threads: 1, weights: 'random' });
    assert.equal(r.weights, 'random');
    assert.equal(r.threads, 1);
    assert.equal(r.lora_parameters, loraParameters(config));
    assertFigures(r, 16);
  });

  it("a model it cannot read fails with the peer's own last words", async () => {
    const bogus = join(dir, 'not-a-model.gguf');
    await rm(bogus, { force: true });
    await assert.rejects(runTorchPeer({ python, modelPath: bogus, tokens: [16], steps: 1 }), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'TS_ERR_UPSTREAM');
      assert.match(err.message, /the torch peer failed \(exit 1\): peer\.py: FileNotFoundError: no model file at .*not-a-model\.gguf$/);
      return true;
    });
  });
});

import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';
import type { LlamaModel } from 'node-llama-cpp';
import { LoadedAdapters } from '../../../gateway/lora-adapters.ts';

/** node-llama-cpp's model as far as LoadedAdapters reaches: its adapter cache, by resolved path. */
function modelWith(paths: string[]): { model: LlamaModel; disposed: string[] } {
  const disposed: string[] = [];
  const cache = new Map(paths.map((p) => [resolve(p), { dispose: async () => void disposed.push(p) }]));
  return { model: { _loraAdapters: cache } as unknown as LlamaModel, disposed };
}

describe('LoadedAdapters', () => {
  it('frees an adapter when the last slot that applies it is disposed, not before', async () => {
    const { model, disposed } = modelWith(['w/v1.gguf', 'w/v2.gguf']);
    const a = new LoadedAdapters(model);
    a.hold('w/v1.gguf');
    a.hold('w/v1.gguf'); // current and pinned by name
    a.hold('w/v2.gguf');
    await a.release('w/v1.gguf');
    assert.deepEqual(disposed, []);
    assert.equal(a.loaded, 2);
    await a.release('w/v1.gguf');
    assert.deepEqual(disposed, ['w/v1.gguf']);
    assert.equal(a.loaded, 1);
  });

  it('the base (no adapter) holds nothing; a path node-llama-cpp never loaded is a no-op', async () => {
    const { model, disposed } = modelWith(['w/v1.gguf']);
    const a = new LoadedAdapters(model);
    a.hold(null);
    await a.release(null);
    a.hold('w/failed.gguf');
    await a.release('w/failed.gguf');
    assert.deepEqual(disposed, []);
    assert.equal(a.loaded, 1);
  });

  it('an adapter that fails to free is dropped with a warning; the caller carries on', async () => {
    const warnings: string[] = [];
    const cache = new Map([[resolve('w/v1.gguf'), { dispose: () => Promise.reject(new Error('busy')) }]]);
    const a = new LoadedAdapters(
      { _loraAdapters: cache } as unknown as LlamaModel,
      { warn: (m: string) => void warnings.push(m) } as never,
    );
    a.hold('w/v1.gguf');
    await a.release('w/v1.gguf');
    assert.equal(a.loaded, 0);
    assert.match(warnings[0]!, /could not free the LoRA adapter w\/v1\.gguf: busy/);
  });

  it('where the cache is out of reach, it frees nothing and warns once', async () => {
    const warnings: string[] = [];
    const a = new LoadedAdapters({} as LlamaModel, { warn: (m: string) => void warnings.push(m) } as never);
    a.hold('w/v1.gguf');
    await a.release('w/v1.gguf');
    assert.equal(a.loaded, null);
    assert.equal(warnings.length, 1);
  });
});

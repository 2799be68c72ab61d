/** API keys: parsing, user ids, 401s. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Authenticator } from '../../../gateway/auth.ts';
import { TurnstreamError } from '../../../streams/errors.ts';

test('no keys configured: auth is off', () => {
  const a = new Authenticator([]);
  assert.equal(a.enabled, false);
  assert.deepEqual(a.authenticate({}), { userId: null });
});

test('key and key:userId entries; the key user is returned', () => {
  const a = new Authenticator(['sk-a:alice', ' sk-b ', 'sk-c:']);
  assert.deepEqual(a.authenticate({ authorization: 'Bearer sk-a' }), { userId: 'alice' });
  assert.deepEqual(a.authenticate({ authorization: 'bearer   sk-b' }), { userId: null });
  assert.deepEqual(a.authenticate({ 'x-api-key': 'sk-c' }), { userId: null });
});

test('missing, malformed or unknown keys are UNAUTHORIZED', () => {
  const a = new Authenticator(['sk-a:alice']);
  for (const headers of [
    {},
    { authorization: 'sk-a' },
    { authorization: 'Bearer sk-b' },
    { authorization: 'Bearer sk-a-longer' },
    { authorization: 'Basic abc' },
  ]) {
    assert.throws(
      () => a.authenticate(headers),
      (e: unknown) => e instanceof TurnstreamError && e.code === 'TS_ERR_UNAUTHORIZED',
      JSON.stringify(headers),
    );
  }
});

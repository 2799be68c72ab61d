/** API keys: parsing, user and service keys, 401s, and who a call is recorded under. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { actAs, Authenticator, OPEN_CALLER } from '../../../gateway/auth.ts';
import { presentedKey } from '../../../core/api-keys.ts';
import { TurnstreamError } from '../../../core/errors.ts';

const code = (c: string) => (e: unknown) => e instanceof TurnstreamError && e.code === c;

test('no keys configured: auth is off', () => {
  const a = new Authenticator([]);
  assert.equal(a.enabled, false);
  assert.deepEqual(a.authenticate({}), { enforced: false, userId: null, service: false });
});

test('key and key:userId entries; the key user is returned; service keys are marked', () => {
  const a = new Authenticator(['sk-a:alice', ' sk-b ', 'sk-c:'], ['svc-1:frontend', 'svc-2']);
  assert.deepEqual(a.authenticate({ authorization: 'Bearer sk-a' }), { enforced: true, userId: 'alice', service: false });
  assert.deepEqual(a.authenticate({ authorization: 'bearer   sk-b' }), { enforced: true, userId: null, service: false });
  assert.deepEqual(a.authenticate({ 'x-api-key': 'sk-c' }), { enforced: true, userId: null, service: false });
  assert.deepEqual(a.authenticate({ authorization: 'Bearer svc-1' }), { enforced: true, userId: 'frontend', service: true });
  assert.deepEqual(a.authenticate({ 'api-key': 'svc-2' }), { enforced: true, userId: 'service', service: true });
  // Service keys alone turn auth on.
  assert.equal(new Authenticator([], ['svc']).enabled, true);
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
    assert.throws(() => a.authenticate(headers), code('TS_ERR_UNAUTHORIZED'), JSON.stringify(headers));
  }
});

test('a browser login (Basic, the key as password) presents the key', () => {
  const basic = `Basic ${Buffer.from('anyone:sk-a').toString('base64')}`;
  assert.equal(presentedKey({ authorization: basic }), 'sk-a');
  assert.deepEqual(new Authenticator(['sk-a:alice']).authenticate({ authorization: basic }).userId, 'alice');
});

test('a user key is its user: naming another user is 403, naming itself is fine', () => {
  const alice = { enforced: true, userId: 'alice', service: false };
  assert.deepEqual(actAs(alice, null, 'user'), { userId: 'alice', actedBy: null });
  assert.deepEqual(actAs(alice, 'alice', 'X-User-Id'), { userId: 'alice', actedBy: null });
  assert.throws(
    () => actAs(alice, 'bob', 'X-User-Id'),
    (e: unknown) => e instanceof TurnstreamError && e.code === 'TS_ERR_FORBIDDEN' && e.param === 'X-User-Id',
  );
  // A key without a user is anonymous: it cannot name one either.
  assert.throws(() => actAs({ enforced: true, userId: null, service: false }, 'bob', 'user'), code('TS_ERR_FORBIDDEN'));
});

test('a service key may act for anyone, and is recorded as actedBy; auth off takes the name at its word', () => {
  const svc = { enforced: true, userId: 'frontend', service: true };
  assert.deepEqual(actAs(svc, 'bob', 'X-User-Id'), { userId: 'bob', actedBy: 'frontend' });
  assert.deepEqual(actAs(svc, null, 'user'), { userId: 'frontend', actedBy: null });
  assert.deepEqual(actAs(OPEN_CALLER, 'bob', 'X-User-Id'), { userId: 'bob', actedBy: null });
});

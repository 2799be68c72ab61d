/**
 * Schema registration under a concurrent start (issue 13): services starting together on a
 * fresh registry all register the same subjects at once. Every one of them succeeds, with the
 * same schema ids, and the subjects end up BACKWARD-compatible.
 */
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { Compatibility } from '@confluentinc/schemaregistry';
import { createRegistryClient, registerSchemas, topicName, valueSubject } from '../../../schemas/index.ts';
import { ensureStack, uniquePrefix } from '../../support/stack.ts';

let registryUrl: string;
before(async () => {
  registryUrl = (await ensureStack()).registryUrl;
});

test('eight processes registering the same fresh subjects at once all succeed, with the same ids', async () => {
  const naming = { prefix: uniquePrefix('registration-race') };
  const results = await Promise.allSettled(
    Array.from({ length: 8 }, () => registerSchemas(createRegistryClient({ url: registryUrl }), naming)),
  );
  const failed = results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason));
  assert.deepEqual(failed, [], 'no start fails on a registration race');
  const ids = results.map((r) => JSON.stringify((r as PromiseFulfilledResult<unknown>).value));
  assert.equal(new Set(ids).size, 1, 'one id per subject, whoever registered it');
  const client = createRegistryClient({ url: registryUrl });
  assert.equal(await client.getCompatibility(valueSubject(topicName('turns', naming))), Compatibility.BACKWARD);
  // And again, later: idempotent.
  assert.deepEqual(JSON.stringify(await registerSchemas(client, naming)), ids[0]);
});

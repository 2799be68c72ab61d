/** createTopicsRetrying: what earns another attempt at creating topics, and what does not. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Admin } from 'kafkajs';
import { createTopicsRetrying } from '../../../streams/topic-admin.ts';

/** An admin whose createTopics fails with `errors` in turn, then succeeds; it records each call. */
function adminFailing(...errors: object[]): { admin: Admin; calls: unknown[] } {
  const calls: unknown[] = [];
  const admin = {
    createTopics: async (args: unknown) => {
      calls.push(args);
      const err = errors.shift();
      if (err) throw Object.assign(new Error('createTopics failed'), err);
      return true;
    },
  } as unknown as Admin;
  return { admin, calls };
}

const topics = [{ topic: 't', numPartitions: 1, replicationFactor: 1 }];

test('UNKNOWN_TOPIC_OR_PARTITION while the leaders are awaited (kafkajs does not retry it) earns another attempt, leaders awaited each time', async () => {
  const { admin, calls } = adminFailing({ type: 'UNKNOWN_TOPIC_OR_PARTITION' }, { originalError: { type: 'UNKNOWN_TOPIC_OR_PARTITION' } });
  await createTopicsRetrying(admin, { topics });
  assert.equal(calls.length, 3);
  for (const c of calls) assert.deepEqual(c, { waitForLeaders: true, topics });
});

test('a retriable error earns another attempt; any other is thrown at once', async () => {
  const retriable = adminFailing({ retriable: true, type: 'LEADER_NOT_AVAILABLE' });
  await createTopicsRetrying(retriable.admin, { topics });
  assert.equal(retriable.calls.length, 2);

  const fatal = adminFailing({ retriable: false, type: 'TOPIC_AUTHORIZATION_FAILED' });
  await assert.rejects(createTopicsRetrying(fatal.admin, { topics }), { type: 'TOPIC_AUTHORIZATION_FAILED' });
  assert.equal(fatal.calls.length, 1);
});

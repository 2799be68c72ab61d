/**
 * Replay = live, property-style: seeded random histories (imported files, gateway traffic, both)
 * go through the live assembler's work under a random schedule of fetched batches and
 * punctuations, and through the batch replay's; the pairs must be the same, pair by pair (turn,
 * next state, end marker, feedback, user, times). A failure names its seed and the pairs that
 * differ.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SessionAssemblerOptions } from '../../../processors/session-assembler/index.ts';
import { gatewayHistory, importedHistory, reportedHistory, rng } from './support/generated-history.ts';
import {
  assembleLive,
  assembleReplay,
  differences,
  emptyTopics,
  importLines,
  lastEventTime,
  write,
  type Topics,
} from './support/two-paths.ts';

const MINUTE = 60_000;
/** When the imports run: a month after the history they bring. */
const IMPORTED_AT = Date.parse('2026-04-01T00:00:00Z');

/** Compares the two paths on `topics`; returns the live pairs. */
function same(topics: Topics, options: SessionAssemblerOptions, seed: number, what: string, maxBatch?: number) {
  const idle = options.idleTimeoutMs ?? 30 * MINUTE;
  const endAt = Math.max(IMPORTED_AT, lastEventTime(topics)) + idle + MINUTE;
  const live = assembleLive(topics, options, seed, endAt, maxBatch);
  const replay = assembleReplay(topics, options, endAt);
  const diff = differences(live.pairs, replay);
  assert.deepEqual(diff, [], `${what}, seed ${seed} (${JSON.stringify(options)}): the replay's pairs differ from the live ones`);
  return live;
}

const configs = (seed: number): SessionAssemblerOptions => {
  const r = rng(seed ^ 0xc0f);
  return {
    feedbackGraceMs: [5000, 2000, 500][Math.floor(r() * 3)],
    endPolicy: r() < 0.25 ? 'drop' : 'masked',
  };
};

describe('replay = live: the batch replay pairs as the live assembler does, whatever the schedule', () => {
  it("the reported file (32 conversations, 43 answers): every answer paired with the user's reply, live and replayed", () => {
    for (const partitions of [1, 3, 6]) {
      for (let seed = 1; seed <= 20; seed++) {
        const topics = write(emptyTopics(partitions), importLines(reportedHistory(), IMPORTED_AT, seed));
        const live = same(topics, {}, seed, `reported file on ${partitions} partitions`, 1 + (seed % 7));
        assert.equal(live.pairs.length, 43);
        assert.equal(live.pairs.filter((p) => p.nextState.length > 0 && p.endMarker === null).length, 43, 'all 43 with their next state');
      }
    }
  });

  it('imported histories: 150 seeds, 1–6 partitions, batches of 1–40 records', () => {
    let held = 0;
    for (let seed = 1; seed <= 150; seed++) {
      const partitions = 1 + (seed % 6);
      const topics = write(emptyTopics(partitions), importLines(importedHistory(seed), IMPORTED_AT, seed));
      held += same(topics, { ...configs(seed), idleTimeoutMs: 30 * MINUTE }, seed, 'imported history').heldPunctuations;
    }
    assert.ok(held > 0, 'the live clock held still for imported history read out of time order');
  });

  it('gateway traffic: 150 seeds, idle gaps just under and over the timeout, feedback in and after the grace, session ids reused', () => {
    for (let seed = 1; seed <= 150; seed++) {
      const options = { ...configs(seed), idleTimeoutMs: 5 * MINUTE, closedRetentionMs: 20 * MINUTE };
      const topics = write(emptyTopics(1 + (seed % 4)), gatewayHistory(seed, options));
      same(topics, options, seed, 'gateway traffic');
    }
  });

  it('an import while the gateway writes: 60 seeds', () => {
    for (let seed = 1; seed <= 60; seed++) {
      const options = { ...configs(seed), idleTimeoutMs: 10 * MINUTE, closedRetentionMs: 30 * MINUTE };
      const traffic = gatewayHistory(seed, { ...options, start: IMPORTED_AT - 5 * MINUTE, sessions: 12 });
      const imported = importLines(importedHistory(seed, { conversations: 15 }), IMPORTED_AT, seed);
      const all = [...traffic, ...imported].sort((a, b) => a.at - b.at);
      same(write(emptyTopics(1 + (seed % 3)), all), options, seed, 'import during gateway traffic');
    }
  });
});

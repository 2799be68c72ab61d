import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StreamClock } from '../../../processors/session-assembler/index.ts';

describe('StreamClock (idle-timeout time)', () => {
  it('is the wall clock when nothing flows', () => {
    const c = new StreamClock(5000);
    c.now(995_000);
    assert.equal(c.now(1_000_000), 1_000_000);
  });

  it('stands still after a (re)start until a record is read or quietMs passed: a backlog is read before anything falls due', () => {
    const c = new StreamClock(5000);
    assert.equal(c.now(1_000_000), Number.NEGATIVE_INFINITY);
    assert.equal(c.now(1_004_999), Number.NEGATIVE_INFINITY);
    c.observe('turns:0', 900_000, 1_004_999);
    assert.equal(c.now(1_005_000), 900_000);
  });

  it('follows the event time of the slowest flowing partition while a backlog is read', () => {
    const c = new StreamClock(5000);
    c.observe(0, 100_000, 1_000_000);
    c.observe(1, 400_000, 1_000_000);
    c.observe(0, 90_000, 1_000_001); // older event: time does not go back
    assert.equal(c.now(1_000_002), 100_000);
  });

  it('returns to the wall clock once the consumer is quiet (caught up)', () => {
    const c = new StreamClock(5000);
    c.observe(0, 100_000, 1_000_000);
    assert.equal(c.now(1_004_999), 100_000);
    assert.equal(c.now(1_005_000), 1_005_000);
  });

  it('keeps each topic\'s partition apart: a feedback backlog holds time back as much as a turns backlog', () => {
    const c = new StreamClock(5000);
    c.observe('turns:0', 400_000, 1_000_000);
    c.observe('feedback:0', 150_000, 1_000_000);
    assert.equal(c.now(1_000_001), 150_000);
  });
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StreamClock } from '../../../processors/session-assembler/index.ts';

// Exact event times (no tolerance for records out of order) unless a test says otherwise.
describe('StreamClock (idle-timeout time)', () => {
  it('is the wall clock when nothing flows', () => {
    const c = new StreamClock(5000, 60_000, 0);
    c.now(995_000);
    assert.equal(c.now(1_000_000), 1_000_000);
  });

  it('stands still after a (re)start until a record is read or quietMs passed: a backlog is read before anything falls due', () => {
    const c = new StreamClock(5000, 60_000, 0);
    assert.equal(c.now(1_000_000), Number.NEGATIVE_INFINITY);
    assert.equal(c.now(1_004_999), Number.NEGATIVE_INFINITY);
    c.observe('turns:0', 900_000, 1_004_999);
    assert.equal(c.now(1_005_000), 900_000);
  });

  it('follows the event time of the slowest flowing partition while a backlog is read', () => {
    const c = new StreamClock(5000, 60_000, 0);
    c.observe(0, 100_000, 1_000_000);
    c.observe(1, 400_000, 1_000_000);
    c.observe(0, 90_000, 1_000_001); // older event: time does not go back
    assert.equal(c.now(1_000_002), 100_000);
  });

  it('returns to the wall clock once the consumer is quiet (caught up)', () => {
    const c = new StreamClock(5000, 60_000, 0);
    c.observe(0, 100_000, 1_000_000);
    assert.equal(c.now(1_004_999), 100_000);
    assert.equal(c.now(1_005_000), 1_005_000);
  });

  it("keeps each topic's partition apart: a feedback backlog holds time back as much as a turns backlog", () => {
    const c = new StreamClock(5000, 60_000, 0);
    c.observe('turns:0', 400_000, 1_000_000);
    c.observe('feedback:0', 150_000, 1_000_000);
    assert.equal(c.now(1_000_001), 150_000);
  });

  it('a source that was still behind holds time back through a stall longer than quietMs, up to stallMs', () => {
    const c = new StreamClock(5000, 60_000, 0);
    c.observe('turns:0', 100_000, 1_000_000, 500); // 500 more records to read, then nothing for a while
    c.observe('turns:1', 400_000, 1_000_000, 0);
    assert.equal(c.now(1_030_000), 100_000);
    assert.equal(c.now(1_059_999), 100_000);
    assert.equal(c.now(1_060_000), 1_060_000);
  });

  it('lag 1 is the end marker of a transaction, not a backlog', () => {
    const c = new StreamClock(5000, 60_000, 0);
    c.observe('turns:0', 100_000, 1_000_000, 1);
    assert.equal(c.now(1_005_000), 1_005_000);
  });

  it('a source that catches up stops holding time back once quiet', () => {
    const c = new StreamClock(5000, 60_000, 0);
    c.observe('turns:0', 100_000, 1_000_000, 50);
    c.observe('turns:0', 120_000, 1_000_100, 0);
    assert.equal(c.now(1_005_100), 1_005_100);
  });

  it('whether a source is behind comes from its furthest record, whatever order records are handled in', () => {
    const c = new StreamClock(5000, 60_000, 0);
    c.observe('turns:0', 120_000, 1_000_000, 0, 10); // the last record, handled first (another key)
    c.observe('turns:0', 100_000, 1_000_001, 8, 2); // an earlier one, handled after it
    assert.equal(c.now(1_005_001), 1_005_001);
  });

  it('waits up to quietMs for an expected source not read yet (feedback of a turns partition just read)', () => {
    const c = new StreamClock(5000, 60_000, 0);
    c.observe('turns:0', 100_000, 1_000_000);
    c.expect('feedback:0', 1_000_000);
    assert.equal(c.now(1_000_001), Number.NEGATIVE_INFINITY, 'the feedback batch of the partition may hold a 👍 for what the turns let go');
    c.observe('feedback:0', 90_000, 1_000_002);
    assert.equal(c.now(1_000_003), 90_000, 'read: its event time counts like any source');
    c.expect('feedback:0', 1_000_004);
    assert.equal(c.now(1_000_005), 90_000, 'a source already read is not waited for again');
  });

  it('after a rejoin quiet counts from the rejoin, as after a restart: a stalled group is not a caught-up one', () => {
    const c = new StreamClock(5000, 60_000, 0);
    c.observe('feedback:1', 100_000, 1_000_000, 0, 0); // read to its end, then the group stalled
    c.observe('turns:1', 95_000, 1_000_000, 0, 7);
    assert.equal(c.now(1_100_000), 1_100_000, 'quiet: the wall clock (a session idle since 100,000 would close)');
    c.rejoined(1_100_000); // 100 s later the consumer is back in its group: turns:1 may hold more by now
    assert.equal(c.now(1_104_999), 95_000, 'held while the consumer reads again');
    c.observe('turns:1', 101_000, 1_103_000, 0, 8); // the turn the stall kept back
    assert.equal(c.now(1_104_999), 100_000);
    assert.equal(c.now(1_108_000), 1_108_000, 'quiet again: the wall clock');
  });

  it('a partition taken over from another instance holds time until its backlog is read, whatever this instance read of it before', () => {
    // chaos --cluster: an instance held past its session; its partition 1 came here with a
    // session idle since 100,000 and that session's next turns unread. The other partitions,
    // read all along, would have let the wall clock close it before they were.
    const c = new StreamClock(5000, 60_000, 0);
    c.observe('turns:0', 109_000, 1_000_000, 0, 40);
    c.observe('turns:1', 99_000, 900_000, 0, 3); // read by this instance long ago, before it moved away
    c.acquired(['turns:1', 'feedback:1'], 1_000_100);
    assert.equal(c.now(1_000_200), Number.NEGATIVE_INFINITY, 'nothing falls due before the taken-over backlog is read');
    c.observe('turns:1', 101_000, 1_000_300, 1, 16); // its backlog: the session's next turn
    c.observe('feedback:1', 100_500, 1_000_300, 0, 2);
    assert.equal(c.now(1_000_400), 100_500, 'read: the slowest source sets the time again');
  });

  it('stops waiting for an expected source that stays empty after quietMs', () => {
    const c = new StreamClock(5000, 60_000, 0);
    c.observe('turns:1', 100_000, 1_000_000, 50, 10);
    c.expect('feedback:1', 1_000_000);
    assert.equal(c.now(1_004_999), Number.NEGATIVE_INFINITY);
    assert.equal(c.now(1_005_000), 100_000, 'then the turns alone set the time');
  });

  it('stays toleranceMs behind each source: records that far out of order are still in time', () => {
    const c = new StreamClock(5000, 60_000, 1000);
    c.observe('turns:0', 100_000, 1_000_000, 20);
    assert.equal(c.now(1_000_001), 99_000);
    c.observe('turns:0', 99_500, 1_000_002, 19); // another gateway's turn, 0.5 s older: in tolerance
    assert.equal(c.disordered, false);
    assert.equal(c.now(1_000_003), 99_000);
  });

  it('a record older than its source by more than toleranceMs (imported history) holds time until every source is read to its end', () => {
    const c = new StreamClock(5000, 60_000, 1000);
    c.observe('turns:0', 900_000, 1_000_000, 30, 0); // a conversation of Friday...
    c.observe('turns:0', 500_000, 1_000_001, 29, 1); // ...then one of Monday: its rest may follow
    c.observe('feedback:0', 900_001, 1_000_001, 10, 0);
    assert.equal(c.disordered, true);
    assert.equal(c.now(1_000_002), Number.NEGATIVE_INFINITY, 'nothing falls due while the backlog is read');
    c.observe('turns:0', 1_000_010, 1_000_003, 0, 30); // turns read to the end
    assert.equal(c.now(1_000_004), Number.NEGATIVE_INFINITY, 'the feedback partition is still behind');
    c.observe('feedback:0', 900_000, 1_000_005, 0, 10);
    assert.equal(c.now(1_000_006), 899_001, 'all read: event time again, the slowest source less the tolerance');
    assert.equal(c.disordered, false);
  });

  it('a disordered source whose backlog stalls holds time for stallMs at most', () => {
    const c = new StreamClock(5000, 60_000, 1000);
    c.observe('turns:0', 900_000, 1_000_000, 30, 0);
    c.observe('turns:0', 500_000, 1_000_001, 29, 1);
    assert.equal(c.now(1_060_000), Number.NEGATIVE_INFINITY);
    assert.equal(c.now(1_060_001), 1_059_001, 'then the wall clock, less the tolerance');
  });

  it('a burst out of order (retries after a broker failed) under steady load holds time for stallMs after its last disordered record, not until no source is behind', () => {
    const c = new StreamClock(5000, 60_000, 1000);
    c.observe('turns:0', 900_000, 1_000_000, 30, 0);
    c.observe('turns:0', 880_000, 1_000_001, 29, 1); // a turn sent again, 20 s late
    assert.equal(c.disordered, true);
    // Steady load: records in order every second, always with a backlog behind them.
    let offset = 2;
    for (let wall = 1_000_002; wall < 1_000_002 + 59_000; wall += 1000) c.observe('turns:0', wall - 100_000, wall, 5, offset++);
    assert.equal(c.now(1_060_000), Number.NEGATIVE_INFINITY, 'within stallMs of the disordered record');
    c.observe('turns:0', 960_001, 1_060_001, 5, offset++);
    assert.equal(c.now(1_060_002), 959_001, 'then event time again, though the source is still behind');
    assert.equal(c.disordered, false);
  });
});

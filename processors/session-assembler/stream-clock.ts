/**
 * The clock of idle timeouts. Wall-clock time is wrong while a backlog is processed (a replay,
 * a restart after downtime, an outbox drained late): sessions would time out before their later
 * turns, still in the backlog, are read. Event time alone is wrong when the stream is quiet: the
 * last session would never time out. So: while records are flowing, time is the event time of the
 * slowest flowing source (a topic's partition: turns and feedback are read at their own pace);
 * once no record arrived for `quietMs`, the consumer has caught up and time is the wall clock.
 * Before the first record, time stands still for `quietMs` from the first question: a restarted
 * consumer must read its backlog (the feedback for a held pair, the next turn of a session that
 * looks idle) before anything restored from its state falls due.
 *
 * A source whose last record was read with more records behind it (a backlog) has not caught
 * up, however long its next record takes (backpressure, a slow transaction, a rebalance): it
 * holds time back for up to `stallMs`, not just `quietMs`. The bound is there because a
 * partition ending in an aborted transaction shows a lag that read_committed never delivers.
 *
 * After the consumer rejoins its group (a rebalance: say, a broker stalled long enough to expire
 * the session) nothing was read for a while because nothing could be, not because everything
 * was: quiet is then counted from the rejoin, as after a restart. Without that, a session whose
 * feedback was read before the stall closed idle at the first tick after it, and its turn, read
 * a moment later, was late. (Holding every source as behind, for up to `stallMs`, was tried: with
 * the group rejoining every 20–60 s under load, the clock stood still and no pair went out.)
 *
 * A source `expect`ed but not read yet (the feedback partition of a turns partition just read:
 * they are handled in separate batches) holds time still for up to `quietMs`, as before the
 * first record: a 👍 it holds may belong to a pair that the turns read so far would let go.
 *
 * The event time of what was read is a promise about what is still unread only while each
 * source is in event-time order. Gateways write turns in the order they complete, give or take
 * `toleranceMs` (several gateways, a producer's batching, the way to Kafka): time stays that far
 * behind each source, and behind the wall clock once caught up. Imported history is written in the file's order, whatever its times (a conversation
 * from Monday after one from Friday): a record more than `toleranceMs` older than its source's
 * newest one shows that the unread records may be older still (the rest of its conversation,
 * its feedback in the other topic). Time then stands still until every source has been read to
 * its end: nothing falls due, no session closes by the idle timeout and no held pair is let go
 * before the records that belong to it are read. Without it, a conversation read after a later
 * one closed by the idle timeout between its turns whenever a punctuation fell between the two
 * fetched batches that held them, so the live pairs depended on how the backlog was fetched.
 * Once records have come in order again for `stallMs`, the disorder was a burst (turns a gateway
 * sent again after a broker failed) and time moves again, backlogs or not: under steady load
 * some source is always behind, and in a three-broker chaos run pairs were held for minutes.
 */
export class StreamClock {
  private readonly sources = new Map<string | number, { eventTime: number; seenAt: number; behind: boolean; offset: number }>();

  /** Set (to when) while a source showed records out of event-time order and the backlog is not read yet. */
  private disorderedSince: number | undefined;
  /** When the last record out of event-time order was read (wall time). */
  private lastDisorderAt = 0;

  /**
   * @param quietMs how long without records means "caught up". @default 5000
   * @param stallMs how long a source that was still behind may go without records before it counts as caught up. @default 60000
   * @param toleranceMs how far out of event-time order a source's records may come without holding time still; time stays this far behind each source. @default 1000
   */
  constructor(
    private readonly quietMs = 5000,
    private readonly stallMs = 60_000,
    private readonly toleranceMs = 1000,
  ) {}

  /**
   * Notes a record of `source` (e.g. `turns:3`) with event time `eventTime`, read at wall time
   * `wallNow`, at `offset` with `lag` records after it in its partition (1 is a transaction's end
   * marker). Records of one partition are handled concurrently (by key), so whether the source is
   * behind is taken from its furthest record, not its latest handled one.
   */
  observe(source: string | number, eventTime: number, wallNow: number, lag = 0, offset = Number.MAX_SAFE_INTEGER): void {
    const p = this.sources.get(source);
    if (!p) this.expected.delete(source);
    this.awaited.delete(source);
    if (p && eventTime < p.eventTime - this.toleranceMs) {
      this.disorderedSince ??= wallNow;
      this.lastDisorderAt = wallNow;
    }
    const furthest = !p || offset >= p.offset;
    this.sources.set(source, {
      eventTime: Math.max(p?.eventTime ?? 0, eventTime),
      seenAt: wallNow,
      behind: furthest ? lag > 1 : p.behind,
      offset: furthest ? offset : p.offset,
    });
  }

  private firstAskedAt: number | undefined;
  /** Sources expected but not read yet → when they were first expected (wall time). */
  private readonly expected = new Map<string | number, number>();

  /** Sources expected and not read since → when last expected (wall time): they hold a disordered backlog's time. */
  private readonly awaited = new Map<string | number, number>();

  /**
   * Notes that `source` has records to come (a co-partitioned input of one just read): time waits
   * for it up to `quietMs` if it was never read, and, while records out of order are being read,
   * until it is read again (up to `quietMs` from the last call): an import's conversation and its feedback are
   * written together, and the feedback must be read before what it belongs to may go.
   */
  expect(source: string | number, wallNow: number): void {
    if (!this.sources.has(source) && !this.expected.has(source)) this.expected.set(source, wallNow);
    this.awaited.set(source, wallNow);
  }

  /**
   * Notes that `sources` were just taken over from another instance (claimed, state restored,
   * positioned at the committed offsets): their backlog is unread, and sessions restored from
   * them must not fall due before it is. What this instance read of them before is forgotten, and
   * time waits for them as for a source expected (up to `quietMs`, longer while they are behind).
   */
  acquired(sources: ReadonlyArray<string | number>, wallNow: number): void {
    for (const source of sources) {
      this.sources.delete(source);
      this.expected.set(source, wallNow);
    }
  }

  /** Notes that the consumer (re)joined its group at `wallNow`: what it read before may be far behind now. */
  rejoined(wallNow: number): void {
    for (const [source, p] of this.sources) this.sources.set(source, { ...p, seenAt: wallNow });
    for (const source of this.expected.keys()) this.expected.set(source, wallNow);
    for (const source of this.awaited.keys()) this.awaited.set(source, wallNow);
  }

  /** Whether time stands still for records read out of event-time order (see the class). */
  get disordered(): boolean {
    return this.disorderedSince !== undefined;
  }

  /** The time to expire sessions and release held pairs against. */
  now(wallNow: number): number {
    this.firstAskedAt ??= wallNow;
    if (this.sources.size === 0 && wallNow - this.firstAskedAt < this.quietMs) return Number.NEGATIVE_INFINITY;
    for (const since of this.expected.values()) if (wallNow - since < this.quietMs) return Number.NEGATIVE_INFINITY;
    const reading = (p: { seenAt: number; behind: boolean }) => p.behind && wallNow - p.seenAt < this.stallMs;
    // Records in order again for stallMs: a burst (a gateway's retries after a broker failed), not
    // an import. Under steady load some source is always behind, so waiting for every backlog to
    // be read would hold time still for as long as the load lasts.
    if (this.disorderedSince !== undefined && wallNow - this.lastDisorderAt >= this.stallMs) this.disorderedSince = undefined;
    if (this.disorderedSince !== undefined) {
      for (const p of this.sources.values()) if (reading(p)) return Number.NEGATIVE_INFINITY;
      for (const since of this.awaited.values()) if (wallNow - since < this.quietMs) return Number.NEGATIVE_INFINITY;
      this.disorderedSince = undefined;
    }
    // Quiet: caught up, but what completed within the tolerance may still be on its way.
    let t = wallNow - this.toleranceMs;
    for (const p of this.sources.values())
      if (wallNow - p.seenAt < (p.behind ? this.stallMs : this.quietMs)) t = Math.min(t, p.eventTime - this.toleranceMs);
    return t;
  }
}

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
 */
export class StreamClock {
  private readonly sources = new Map<string | number, { eventTime: number; seenAt: number }>();

  /** @param quietMs how long without records means "caught up". @default 5000 */
  constructor(private readonly quietMs = 5000) {}

  /** Notes a record of `source` (e.g. `turns:3`) with event time `eventTime`, read at wall time `wallNow`. */
  observe(source: string | number, eventTime: number, wallNow: number): void {
    const p = this.sources.get(source);
    this.sources.set(source, { eventTime: Math.max(p?.eventTime ?? 0, eventTime), seenAt: wallNow });
  }

  private firstAskedAt: number | undefined;

  /** The time to expire sessions and release held pairs against. */
  now(wallNow: number): number {
    this.firstAskedAt ??= wallNow;
    if (this.sources.size === 0 && wallNow - this.firstAskedAt < this.quietMs) return Number.NEGATIVE_INFINITY;
    let t = wallNow;
    for (const p of this.sources.values()) if (wallNow - p.seenAt < this.quietMs) t = Math.min(t, p.eventTime);
    return t;
  }
}

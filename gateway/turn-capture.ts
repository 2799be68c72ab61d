/**
 * Turn capture: exactly one Turn event per completed call, written to the local fsync'd outbox
 * (which drains to `turnstream.turns.v1`, keyed by sessionId). The caller waits at most
 * `boundMs` for the append: a slow disk never stalls a chat request beyond that, and Kafka is
 * never on the request path at all.
 *
 * Only completed generations are recorded (finish reason stop / length / tool_calls): a call
 * that failed (bad input, engine error) or was aborted (client gone, timeout, shutdown) has
 * no answer to learn from and produces no Turn. Empty answers are recorded (the sample
 * builder skips them).
 *
 * Every Turn is sized before it enters the outbox: one larger than its topic allows is shrunk
 * by the rule of turn-fit.ts (the truncation recorded in the Turn) and kept whole, gzipped, in
 * `oversizedDir`, so it can never block the outbox and nothing of it is lost.
 *
 * turnId is deterministic: with an `Idempotency-Key` (or `X-Request-Id`) header it is a
 * name-based uuid of (sessionId, key), so a client's retry gets the same id; otherwise a
 * random uuid fixed at request time. It travels with the event through the outbox, so every
 * re-delivery carries the same id and downstream dedupes on it.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, open } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { deterministicId, encodedSize, type Feedback, type Turn } from '../schemas/index.ts';
import { ErrorCodes, TurnstreamError, type Logger } from '../core/index.ts';
import { type Outbox, maxValueBytes } from '../streams/index.ts';
import { GATEWAY_DEFAULTS } from './defaults.ts';
import type { GatewayMetrics } from './metrics.ts';
import { Ownership } from './ownership.ts';
import type { SessionIndex } from './session-index.ts';
import { fitTurn } from './turn-fit.ts';

export function turnIdFor(sessionId: string, idempotencyKey: string | undefined): string {
  return idempotencyKey ? deterministicId('turn', sessionId, idempotencyKey) : randomUUID();
}

export interface TurnCaptureOptions {
  outbox: Outbox;
  index: SessionIndex;
  metrics: GatewayMetrics;
  logger: Logger;
  /** Longest wait for the outbox append before answering anyway. @default 1000 */
  boundMs?: number;
  /** Turns (and sessions) remembered for feedback by turn id and ownership. @default 100000 */
  recentTurns?: number;
  /** Append events to the outbox; off, turns are only remembered for session inference. @default true */
  enabled?: boolean;
  /** Largest encoded Turn; a larger one is shrunk (turn-fit.ts). @default the turns topic's limit less RECORD_OVERHEAD_BYTES */
  maxTurnBytes?: number;
  /** Where shrunk Turns are kept whole (`<turnId>.json.gz`). @default no copy kept */
  oversizedDir?: string;
}

const gzipped = promisify(gzip);

export class TurnCapture {
  /** Who owns which turn and session (feedback by turn id, ownership checks). */
  readonly ownership: Ownership;
  private readonly boundMs: number;
  private readonly maxTurnBytes: number;
  /** Appends that outlived their bound, still running. */
  private readonly slow = new Set<Promise<unknown>>();

  constructor(private readonly opts: TurnCaptureOptions) {
    this.ownership = new Ownership(opts.recentTurns ?? 100_000);
    this.boundMs = opts.boundMs ?? GATEWAY_DEFAULTS.captureBoundMs;
    this.maxTurnBytes = opts.maxTurnBytes ?? maxValueBytes('turns');
  }

  /** The session of a recent turn, for feedback that names only the turn. */
  sessionOf(turnId: string): string | undefined {
    return this.ownership.turn(turnId)?.sessionId;
  }

  /**
   * Learns a turn served by any gateway instance (read back from the turns topic): its
   * continuation for session inference, and its session for feedback by turn id. Turns this
   * process captured itself are known already and skipped.
   */
  learn(turn: Turn): void {
    if (this.ownership.has(turn.turnId)) return;
    this.opts.index.remember(turn.sessionId, turn.requestMessages, turn.response, turn.userId);
    this.ownership.record(turn);
    this.opts.metrics.sessionIndexSize.set(this.opts.index.size);
  }

  /**
   * Records a completed turn: remembers it for session inference (whole, as the client will
   * resend it), sizes it (shrinking it to fit its topic if need be), then appends it (bounded wait).
   */
  async capture(turn: Turn): Promise<void> {
    this.opts.index.remember(turn.sessionId, turn.requestMessages, turn.response, turn.userId);
    this.ownership.record(turn);
    this.opts.metrics.sessionIndexSize.set(this.opts.index.size);
    if (this.opts.enabled === false) return;
    this.opts.metrics.turnsCaptured.inc({ turn_type: turn.turnType, session_source: turn.sessionSource });
    const keptIn = this.opts.oversizedDir ? join(this.opts.oversizedDir, `${turn.turnId}.json.gz`) : null;
    const { turn: event, truncation } = fitTurn(turn, this.maxTurnBytes, keptIn);
    if (!truncation) return this.bounded(this.opts.outbox.append('turns', turn.sessionId, event), { turnId: turn.turnId });
    this.opts.metrics.turnsTruncated.inc();
    this.opts.logger.warn(
      { turnId: turn.turnId, ...truncation, limit: this.maxTurnBytes },
      'turn larger than its topic allows: shrunk to fit (whole copy kept)',
    );
    const keep = keptIn ? this.keepWhole(turn, keptIn) : Promise.resolve();
    await this.bounded(
      keep.then(() => this.opts.outbox.append('turns', turn.sessionId, event)),
      { turnId: turn.turnId },
    );
  }

  /** Writes the whole Turn (gzipped JSON, fsync'd) where its shrunk event says it is kept. */
  private async keepWhole(turn: Turn, path: string): Promise<void> {
    try {
      await mkdir(this.opts.oversizedDir as string, { recursive: true });
      const h = await open(path, 'w');
      try {
        await h.writeFile(await gzipped(JSON.stringify(turn)));
        await h.datasync();
      } finally {
        await h.close();
      }
    } catch (err) {
      this.opts.logger.error({ err, turnId: turn.turnId, path }, 'could not keep the whole turn; the shrunk one is captured');
    }
  }

  async captureFeedback(fb: Feedback): Promise<void> {
    if (this.opts.enabled === false)
      throw new TurnstreamError(ErrorCodes.UNAVAILABLE, 'this gateway runs with capture off: feedback is not recorded');
    const size = encodedSize('feedback', fb);
    if (size > maxValueBytes('feedback')) {
      throw new TurnstreamError(
        ErrorCodes.TOO_LARGE,
        `the feedback is ${size} bytes encoded; at most ${maxValueBytes('feedback')} fit its topic`,
      );
    }
    await this.bounded(this.opts.outbox.append('feedback', fb.sessionId, fb), { feedbackId: fb.feedbackId });
  }

  private async bounded(p: Promise<unknown>, ids: Record<string, string>): Promise<void> {
    const tracked = p.then(
      () => this.opts.metrics.outboxDepth.set(this.opts.outbox.depth),
      (err: unknown) => this.opts.logger.error({ err, ...ids }, 'could not append an event to the outbox'),
    );
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      tracked.then(() => false),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), this.boundMs))),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      this.opts.logger.warn({ ...ids, boundMs: this.boundMs }, 'outbox append is slow; answering without waiting for it');
      this.slow.add(tracked);
      void tracked.finally(() => this.slow.delete(tracked));
    }
  }

  /** Waits for appends that outlived their bound (shutdown). */
  async settle(): Promise<void> {
    await Promise.all([...this.slow]);
  }
}

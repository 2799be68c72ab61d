/**
 * Writing a streamed answer to a client that may read slowly or not at all. Engines produce
 * tokens at their own pace, so what the socket cannot take yet waits in memory; that memory is
 * bounded three ways:
 *
 * - a stream that has not drained for `stallTimeoutMs` (the client stopped reading) is cut;
 * - a stream with more than `maxBufferedBytes` waiting is cut at once;
 * - all streams together may hold `budget.maxBytes` waiting; past it, a stream that is itself
 *   stalled is cut when it writes.
 *
 * A stream with nothing to say for `keepAliveMs` (a long prompt still being evaluated) gets an
 * SSE comment, so clients that give up on a silent body wait for the first token.
 *
 * Cutting destroys the socket, which aborts a generation still running (no Turn: the client
 * never got the answer). After `end()`, the writer keeps watching until the client has read
 * everything or is cut.
 */
import type { ServerResponse } from 'node:http';
import { sseFrame } from './sse.ts';
import { SSE_DEFAULTS } from './defaults.ts';

export interface SseLimits {
  /** How long a stream may stay undrained before it is cut. `GATEWAY_STREAM_STALL_TIMEOUT_MS` @default SSE_DEFAULTS.stallTimeoutMs (30000) */
  stallTimeoutMs?: number;
  /** Bytes one stream may have waiting. `GATEWAY_STREAM_BUFFER_BYTES` @default SSE_DEFAULTS.maxBufferedBytes (1 MiB) */
  maxBufferedBytes?: number;
  /** Bytes all streams together may have waiting. @default SSE_DEFAULTS.maxTotalBufferedBytes (64 MiB) */
  maxTotalBufferedBytes?: number;
  /**
   * A stream silent this long gets an SSE comment (`: keep-alive`, which clients' parsers skip):
   * a long prompt on a CPU can take minutes before its first token, and fetch-based clients (the
   * official `openai` client among them) give up on a body silent for 300 s. @default SSE_DEFAULTS.keepAliveMs (15000)
   */
  keepAliveMs?: number;
}

/** The bytes waiting in every stream's buffer, shared by the writers of one gateway. */
export class SseBudget {
  used = 0;
  readonly stallTimeoutMs: number;
  readonly maxBufferedBytes: number;
  readonly maxBytes: number;
  readonly keepAliveMs: number;

  constructor(limits: SseLimits = {}) {
    this.keepAliveMs = limits.keepAliveMs ?? SSE_DEFAULTS.keepAliveMs;
    this.stallTimeoutMs = limits.stallTimeoutMs ?? SSE_DEFAULTS.stallTimeoutMs;
    this.maxBufferedBytes = limits.maxBufferedBytes ?? SSE_DEFAULTS.maxBufferedBytes;
    this.maxBytes = limits.maxTotalBufferedBytes ?? SSE_DEFAULTS.maxTotalBufferedBytes;
  }
}

export type CutReason = 'stalled' | 'buffer' | 'budget';

export class SseWriter {
  private counted = 0;
  private stall: NodeJS.Timeout | undefined;
  private cutReason: CutReason | null = null;
  private lastWrite = Date.now();
  private readonly keepAlive: NodeJS.Timeout;

  constructor(
    private readonly raw: ServerResponse,
    private readonly budget: SseBudget,
    private readonly onCut: (reason: CutReason) => void,
  ) {
    raw.on('drain', () => this.drained());
    raw.on('close', () => this.settle());
    this.keepAlive = setInterval(() => {
      if (Date.now() - this.lastWrite >= budget.keepAliveMs) this.send(': keep-alive\n\n');
    }, budget.keepAliveMs);
    this.keepAlive.unref();
  }

  /** Why the stream was cut, or null. */
  get cut(): CutReason | null {
    return this.cutReason;
  }

  /** Writes one SSE event (JSON or `[DONE]`); a no-op once the stream is gone. */
  write(payload: unknown): void {
    this.send(sseFrame(payload));
  }

  private send(frame: string): void {
    if (this.raw.destroyed || this.cutReason) return;
    this.lastWrite = Date.now();
    const ok = this.raw.write(frame);
    this.account();
    if (ok) return;
    const waiting = this.raw.writableLength;
    if (waiting > this.budget.maxBufferedBytes) return this.kill('buffer');
    if (this.budget.used > this.budget.maxBytes) return this.kill('budget');
    this.stall ??= setTimeout(() => this.kill('stalled'), this.budget.stallTimeoutMs);
  }

  /** Ends the response; the writer keeps cutting a client that stops reading before the end. */
  end(): void {
    clearInterval(this.keepAlive);
    if (!this.raw.destroyed && !this.cutReason) this.raw.end();
    if (this.raw.writableFinished || this.raw.destroyed) return this.settle();
    this.raw.once('finish', () => this.settle());
    this.stall ??= setTimeout(() => this.kill('stalled'), this.budget.stallTimeoutMs);
  }

  private account(): void {
    const now = this.raw.writableLength;
    this.budget.used += now - this.counted;
    this.counted = now;
  }

  private drained(): void {
    clearTimeout(this.stall);
    this.stall = undefined;
    this.account();
  }

  private kill(reason: CutReason): void {
    if (this.cutReason) return;
    this.cutReason = reason;
    this.onCut(reason);
    this.raw.destroy();
    this.settle();
  }

  /** The stream is over: stop watching, give its bytes back to the budget. */
  private settle(): void {
    clearInterval(this.keepAlive);
    clearTimeout(this.stall);
    this.stall = undefined;
    this.budget.used -= this.counted;
    this.counted = 0;
  }
}

/**
 * Admission control: at most `maxConcurrent` generations run at once, whatever the engine (the
 * built-in model, an upstream, llama.cpp with one sequence per admitted generation); the rest
 * wait in a bounded queue and are served fairly, one caller after the other (round robin over
 * callers, first come first served within one), so a burst from one caller does not hold up
 * the others. Beyond the queue (or its per-caller share), or after `queueTimeoutMs` in it, a
 * request is refused with OVERLOADED (429) and a Retry-After estimated from recent generation
 * times.
 *
 * A slot is held for the generation only, not while a slow client reads the answer (the SSE
 * writer bounds that separately), so slow readers cannot starve the engine.
 */
import { ErrorCodes, TurnstreamError } from '../streams/errors.ts';

export interface AdmissionOptions {
  /** Generations running at once. `GATEWAY_MAX_CONCURRENT_GENERATIONS` @default 8 */
  maxConcurrent?: number;
  /** Requests waiting for a slot, all callers together. `GATEWAY_MAX_QUEUED_GENERATIONS` @default 64 */
  maxQueue?: number;
  /** Requests one caller may have waiting. @default a quarter of `maxQueue` (at least 1) */
  maxQueuePerCaller?: number;
  /** Longest wait for a slot before 429. `GATEWAY_QUEUE_TIMEOUT_MS` @default 30000 */
  queueTimeoutMs?: number;
  /** Called when the counts change (metrics). */
  onChange?: (active: number, queued: number) => void;
}

/** A granted slot: release it once the generation is over (idempotent). */
export interface Slot {
  release(): void;
}

interface Waiter {
  caller: string;
  grant: (slot: Slot) => void;
  fail: (err: unknown) => void;
}

export class Admission {
  readonly maxConcurrent: number;
  readonly maxQueue: number;
  readonly maxQueuePerCaller: number;
  readonly queueTimeoutMs: number;
  private active = 0;
  private queued = 0;
  /** Waiting requests per caller, callers in round-robin order (Map keeps insertion order). */
  private readonly waiting = new Map<string, Waiter[]>();
  /** Exponentially weighted mean of how long a slot is held, ms. */
  private holdMs = 1000;
  private readonly onChange: AdmissionOptions['onChange'];

  constructor(options: AdmissionOptions = {}) {
    this.maxConcurrent = options.maxConcurrent ?? 8;
    this.maxQueue = options.maxQueue ?? 64;
    this.maxQueuePerCaller = options.maxQueuePerCaller ?? Math.max(1, Math.floor(this.maxQueue / 4));
    this.queueTimeoutMs = options.queueTimeoutMs ?? 30_000;
    this.onChange = options.onChange;
    if (!Number.isInteger(this.maxConcurrent) || this.maxConcurrent < 1) throw new RangeError('maxConcurrent must be an integer >= 1');
    if (!Number.isInteger(this.maxQueue) || this.maxQueue < 0) throw new RangeError('maxQueue must be an integer >= 0');
  }

  /** Generations running now. */
  get running(): number {
    return this.active;
  }

  /** Requests waiting now. */
  get waitingCount(): number {
    return this.queued;
  }

  /** How long a refused caller should wait: the queue ahead of it, at the recent pace. */
  retryAfterMs(): number {
    const ahead = this.queued / this.maxConcurrent + 1;
    return Math.min(60_000, Math.max(1000, Math.ceil((ahead * this.holdMs) / 1000) * 1000));
  }

  /**
   * A slot for `caller` (a user id, a key, an address): at once when one is free, else after
   * waiting its turn. Rejects with OVERLOADED when the queue (or the caller's share) is full or
   * the wait exceeds `queueTimeoutMs`, and with the signal's reason when it aborts first.
   */
  acquire(caller: string, signal?: AbortSignal): Promise<Slot> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.active < this.maxConcurrent && this.queued === 0) return Promise.resolve(this.grant());
    const mine = this.waiting.get(caller) ?? [];
    if (this.queued >= this.maxQueue || mine.length >= this.maxQueuePerCaller) {
      const why =
        this.queued >= this.maxQueue ? `${this.queued} requests are waiting` : `${mine.length} of your requests are waiting already`;
      return Promise.reject(this.overloaded(`the gateway is at its limit of ${this.maxConcurrent} concurrent generations and ${why}`));
    }
    return new Promise<Slot>((resolve, reject) => {
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const waiter: Waiter = {
        caller,
        grant: (slot) => {
          done();
          resolve(slot);
        },
        fail: (err) => {
          done();
          reject(err);
        },
      };
      const leave = (err: unknown): void => {
        if (this.remove(waiter)) waiter.fail(err);
      };
      const onAbort = (): void => leave(signal?.reason);
      const timer = setTimeout(
        () => leave(this.overloaded(`waited ${this.queueTimeoutMs} ms for one of the ${this.maxConcurrent} generation slots`)),
        this.queueTimeoutMs,
      );
      signal?.addEventListener('abort', onAbort, { once: true });
      mine.push(waiter);
      this.waiting.set(caller, mine);
      this.queued++;
      this.changed();
    });
  }

  private overloaded(message: string): TurnstreamError {
    return new TurnstreamError(ErrorCodes.OVERLOADED, `${message}; retry later`, { retryAfterMs: this.retryAfterMs() });
  }

  private grant(): Slot {
    this.active++;
    this.changed();
    const t0 = Date.now();
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.holdMs = 0.8 * this.holdMs + 0.2 * (Date.now() - t0);
        this.active--;
        this.next();
        this.changed();
      },
    };
  }

  /** Hands a free slot to the first waiter of the next caller in turn. */
  private next(): void {
    while (this.active < this.maxConcurrent && this.queued > 0) {
      const [caller, list] = this.waiting.entries().next().value as [string, Waiter[]];
      const waiter = list.shift() as Waiter;
      this.waiting.delete(caller);
      // The caller goes to the back of the rotation if it has more waiting.
      if (list.length > 0) this.waiting.set(caller, list);
      this.queued--;
      waiter.grant(this.grant());
    }
  }

  private remove(waiter: Waiter): boolean {
    const list = this.waiting.get(waiter.caller);
    const i = list?.indexOf(waiter) ?? -1;
    if (!list || i < 0) return false;
    list.splice(i, 1);
    if (list.length === 0) this.waiting.delete(waiter.caller);
    this.queued--;
    this.changed();
    return true;
  }

  private changed(): void {
    this.onChange?.(this.active, this.queued);
  }
}

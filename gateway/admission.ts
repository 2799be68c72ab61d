/**
 * Admission control: at most `maxConcurrent` generations run at once, whatever the engine (the
 * built-in model, an upstream, llama.cpp with one sequence per admitted generation), and at
 * most `maxConcurrentPerCaller` of them for one caller; the rest wait in a bounded queue and
 * are served fairly, one caller after the other (round robin over callers, first come first
 * served within one), so a burst from one caller neither fills the engine nor holds up the
 * others. Beyond the queue (or its per-caller share), or after `queueTimeoutMs` in it, a request
 * is refused with OVERLOADED (429) and a Retry-After estimated from recent generation times.
 *
 * A slot is held for the generation only, not while a slow client reads the answer (the SSE
 * writer bounds that separately), so slow readers cannot starve the engine.
 */
import { ErrorCodes, TurnstreamError } from '../core/index.ts';
import { ADMISSION_DEFAULTS } from './defaults.ts';

export interface AdmissionOptions {
  /** Generations running at once. `GATEWAY_MAX_CONCURRENT_GENERATIONS` @default ADMISSION_DEFAULTS.maxConcurrent (8) */
  maxConcurrent?: number;
  /** Generations one caller may run at once. @default a quarter of `maxConcurrent` (at least 1) */
  maxConcurrentPerCaller?: number;
  /** Requests waiting for a slot, all callers together. `GATEWAY_MAX_QUEUED_GENERATIONS` @default ADMISSION_DEFAULTS.maxQueue (64) */
  maxQueue?: number;
  /** Requests one caller may have waiting. @default a quarter of `maxQueue` (at least 1) */
  maxQueuePerCaller?: number;
  /** Longest wait for a slot before 429. `GATEWAY_QUEUE_TIMEOUT_MS` @default ADMISSION_DEFAULTS.queueTimeoutMs (30000) */
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
  readonly maxConcurrentPerCaller: number;
  readonly maxQueue: number;
  readonly maxQueuePerCaller: number;
  readonly queueTimeoutMs: number;
  private active = 0;
  private queued = 0;
  /** Slots held per caller. */
  private readonly holding = new Map<string, number>();
  /** Waiting requests per caller, callers in round-robin order (Map keeps insertion order). */
  private readonly waiting = new Map<string, Waiter[]>();
  /** Exponentially weighted mean of how long a slot is held, ms. */
  private holdMs = 1000;
  private readonly onChange: AdmissionOptions['onChange'];

  constructor(options: AdmissionOptions = {}) {
    this.maxConcurrent = options.maxConcurrent ?? ADMISSION_DEFAULTS.maxConcurrent;
    this.maxConcurrentPerCaller = options.maxConcurrentPerCaller ?? Math.max(1, Math.ceil(this.maxConcurrent / 4));
    this.maxQueue = options.maxQueue ?? ADMISSION_DEFAULTS.maxQueue;
    this.maxQueuePerCaller = options.maxQueuePerCaller ?? Math.max(1, Math.floor(this.maxQueue / 4));
    this.queueTimeoutMs = options.queueTimeoutMs ?? ADMISSION_DEFAULTS.queueTimeoutMs;
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
    // A free slot is taken at once unless a waiter who may have it is ahead.
    if (this.active < this.maxConcurrent && this.mayRun(caller) && this.nextEligible() === undefined)
      return Promise.resolve(this.grant(caller));
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

  private mayRun(caller: string): boolean {
    return (this.holding.get(caller) ?? 0) < this.maxConcurrentPerCaller;
  }

  /** The first caller in the rotation with a waiter and room under its own limit. */
  private nextEligible(): string | undefined {
    for (const caller of this.waiting.keys()) if (this.mayRun(caller)) return caller;
    return undefined;
  }

  private grant(caller: string): Slot {
    this.active++;
    this.holding.set(caller, (this.holding.get(caller) ?? 0) + 1);
    this.changed();
    const t0 = Date.now();
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.holdMs = 0.8 * this.holdMs + 0.2 * (Date.now() - t0);
        this.active--;
        const held = (this.holding.get(caller) ?? 1) - 1;
        if (held > 0) this.holding.set(caller, held);
        else this.holding.delete(caller);
        this.next();
        this.changed();
      },
    };
  }

  /** Hands free slots to the first waiter of the next caller in turn that may run one. */
  private next(): void {
    for (let caller = this.nextEligible(); this.active < this.maxConcurrent && caller !== undefined; caller = this.nextEligible()) {
      const list = this.waiting.get(caller) as Waiter[];
      const waiter = list.shift() as Waiter;
      this.waiting.delete(caller);
      // The caller goes to the back of the rotation if it has more waiting.
      if (list.length > 0) this.waiting.set(caller, list);
      this.queued--;
      waiter.grant(this.grant(caller));
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

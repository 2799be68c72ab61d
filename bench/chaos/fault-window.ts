/**
 * A scenario's fault and what watches it: the fault is injected once (a third of the way into the
 * load, or after it), probe calls go out every second from then on, each a conversation of its
 * own, and a watch waits for the first probe to reach ClickHouse: the recovery time.
 */
import { chatCall, type CallResult } from './load.ts';
import type { Observer } from './observe.ts';
import type { FaultContext, FaultDetails, Scenario } from './scenarios.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class FaultWindow {
  /** When the fault was injected (0 before). */
  at = 0;
  /** The probe calls answered, each with when it was sent. */
  readonly probes: CallResult[] = [];
  /** Seconds from the fault until a probe made after it was in ClickHouse; null until then. */
  recoverS: number | null = null;
  private fault: Promise<FaultDetails> | null = null;
  private during: Promise<FaultDetails> | null = null;
  private probing = false;
  private watching = false;
  private watcher: Promise<void> = Promise.resolve();

  constructor(
    private readonly sc: Scenario,
    private readonly ctx: FaultContext,
    private readonly observer: Observer,
  ) {}

  /** Injects the fault (the first call only), and starts the probes and the recovery watch. */
  start(): void {
    if (this.fault) return;
    this.at = Date.now();
    this.probing = true;
    this.watching = true;
    void this.probeLoop();
    this.watcher = this.watch();
    this.fault = this.sc.inject(this.ctx);
    if (this.sc.during) this.during = this.sc.during(this.ctx);
  }

  /** Once the fault (and what runs during it) is done: what they report. Call after {@link start}. */
  async details(): Promise<FaultDetails> {
    return { ...(await this.fault!), ...(this.during ? await this.during : {}) };
  }

  /** Waits for the recovery watch to end, stops the probes and gives the last in flight time to land. */
  async stop(): Promise<void> {
    await this.watcher;
    this.watching = false;
    this.probing = false;
    await sleep(1500); // the last probes in flight
  }

  private async probeLoop(): Promise<void> {
    const { ctx, probes } = this;
    for (let k = 0; this.probing; k++) {
      const sent = Date.now();
      // Each probe is a conversation of its own, answered when the gateway can.
      void chatCall(
        ctx.gatewayUrls[k % ctx.gatewayUrls.length]!,
        { messages: [{ role: 'user', content: `probe ${k}` }], max_tokens: 4 },
        { 'x-session-id': `${ctx.prefix}probe-${k}`, 'idempotency-key': `${ctx.prefix}probe-${k}` },
        300_000,
      ).then((r) => void (r && probes.push({ ...r, at: sent })));
      await sleep(1000);
    }
  }

  // Recovery: when the first probe made after the fault shows up in ClickHouse, watched from the
  // fault on (whatever the fault itself still waits for).
  private async watch(): Promise<void> {
    const faultAt = this.at;
    for (const deadline = faultAt + 300_000; this.recoverS === null && this.watching && Date.now() < deadline; await sleep(500)) {
      const inCh = await this.observer.clickhouseTurns(`${this.ctx.prefix}probe-`);
      if ([...inCh.keys()].some((id) => this.probes.some((p) => p.turnId === id))) {
        this.recoverS = Math.round((Date.now() - faultAt) / 100) / 10;
      }
    }
  }
}

/**
 * What a gateway does with each WeightVersion of the weights topic, in front of its engine's hot
 * swap: remember it (a pinned `model@N` is fetched through it later), and make the newest version
 * of the served model local — fetched from Kafka when its URI names the weight-blobs topic
 * (policy/weight-transport.ts), left to the store otherwise — before offering it.
 *
 * Versions are made local one at a time, the newest first: a burst (a gateway started later,
 * catching up from the topic's beginning) fetches the newest version, not every one before it. A
 * fetch that fails (a piece or file whose sha256 does not match, pieces missing, Kafka away) is
 * logged with its reason and counted, and the version being served keeps serving; the next
 * version to arrive is fetched as usual.
 */
import type { Logger } from '../core/index.ts';
import type { WeightTransport } from '../policy/index.ts';
import type { WeightVersion } from '../schemas/index.ts';

export interface WeightsFollowerOptions {
  /** The served model: other models' versions are only remembered. */
  modelId: string;
  transport: WeightTransport;
  /** The version the engine serves now (null before the first load). */
  current: () => number | null;
  /** The engine's hot swap (resolves once the version is loaded or refused). */
  offer: (wv: WeightVersion) => Promise<void>;
  logger?: Pick<Logger, 'info' | 'warn' | 'error'>;
}

export class WeightsFollower {
  /** The newest version seen and not handled yet. */
  private next: WeightVersion | null = null;
  /** The newest version handled (offered, or refused by its fetch). */
  private handled = -1;
  private running: Promise<void> | null = null;
  /** Versions whose fetch failed since start. */
  fetchFailures = 0;

  constructor(private readonly o: WeightsFollowerOptions) {}

  /** Takes a WeightVersion from the weights topic; returns at once (the fetch runs behind). */
  onVersion(wv: WeightVersion): void {
    this.o.transport.remember(wv);
    if (wv.modelId !== this.o.modelId) return;
    if (wv.version <= Math.max(this.o.current() ?? -1, this.handled, this.next?.version ?? -1)) return;
    this.next = wv;
    this.running ??= this.drain().finally(() => (this.running = null));
  }

  /** Resolves when every version seen so far is handled. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  private async drain(): Promise<void> {
    // Let the rest of a fetched batch of WeightVersions arrive first: the newest of them is fetched.
    await new Promise((r) => setImmediate(r));
    while (this.next) {
      const wv = this.next;
      this.next = null;
      this.handled = Math.max(this.handled, wv.version);
      if (wv.version <= (this.o.current() ?? -1)) continue;
      try {
        await this.o.transport.localize(wv);
      } catch (err) {
        this.fetchFailures++;
        this.o.logger?.error(
          { err, modelId: wv.modelId, version: wv.version, uri: wv.uri },
          `could not fetch ${wv.modelId} v${wv.version}: ${(err as Error).message}; still serving the current version`,
        );
        continue;
      }
      await this.o.offer(wv);
    }
  }
}

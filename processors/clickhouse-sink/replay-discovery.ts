/**
 * With `replayTags`, the sink follows the tagged topics of replays: those that exist when it
 * joins, and those created since, looked for every `intervalMs`. kafkajs resolves a subscription
 * once, when the consumer joins, so a new one makes the consumer flush, commit and rejoin.
 * Nothing is looked for while ClickHouse is down (the consumer is paused).
 */
import type { Admin, Kafka } from 'kafkajs';
import type { FlushConsumer } from '../../streams/index.ts';
import type { Logger } from '../../core/index.ts';
import type { SinkRoutes } from './sink-routes.ts';

export interface ReplayDiscoveryOptions {
  kafka: Kafka;
  routes: SinkRoutes;
  /** 0 = only when the consumer joins. */
  intervalMs: number;
  logger: Logger;
}

export class ReplayDiscovery {
  private admin: Admin | undefined;
  private timer: NodeJS.Timeout | undefined;
  private discovering: Promise<void> = Promise.resolve();
  private busy = false;
  private stopping = false;

  constructor(private readonly o: ReplayDiscoveryOptions) {}

  /** Connects to the cluster; the replay topics that exist now, sorted (the consumer reads them from their start). */
  async open(): Promise<string[]> {
    this.admin = this.o.kafka.admin();
    await this.admin.connect();
    return this.replayTopics();
  }

  /** Looks again every `intervalMs`, rejoining `consumer` when something new turns up. */
  start(consumer: FlushConsumer): void {
    if (this.o.intervalMs <= 0 || this.stopping) return;
    this.timer = setInterval(() => {
      if (this.busy) return;
      this.busy = true;
      this.discovering = this.discover(consumer)
        .catch((err) => this.o.logger.warn({ err: (err as Error).message }, 'replay topic discovery failed'))
        .finally(() => void (this.busy = false));
    }, this.o.intervalMs);
  }

  /** Looks no more (a look in flight ends on its own: `settled`). */
  halt(): void {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
  }

  /** Resolves once no look is in flight. */
  async settled(): Promise<void> {
    await this.discovering.catch(() => undefined);
  }

  async close(): Promise<void> {
    await this.admin?.disconnect().catch(() => undefined);
  }

  private async replayTopics(): Promise<string[]> {
    return this.admin ? this.o.routes.replayTopicsAmong(await this.admin.listTopics()) : [];
  }

  /** Follows the replay topics created since the consumer joined (a rejoin). Skipped while ClickHouse is down. */
  private async discover(consumer: FlushConsumer): Promise<void> {
    if (this.stopping || consumer.paused) return;
    const found = await this.replayTopics();
    const now = consumer.stats().topics;
    if (this.stopping || (!consumer.rejoining && found.every((t) => now.includes(t)))) return;
    this.o.logger.info({ topics: found.filter((t) => !now.includes(t)) }, 'new replay topics; rejoining to follow them');
    // A replay's topics are its output, all new: read them whole whatever fromBeginning says.
    await consumer.rejoin(this.o.routes.familyTopics, found);
  }
}

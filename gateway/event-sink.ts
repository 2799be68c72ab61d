/**
 * The gateway's link to Kafka: the outbox's sender (an idempotent, acks=all producer) and the
 * followers of the weights and turns topics. Kafka being down at start is not an error: the connection (registry
 * codecs, topics, producer) is retried by the outbox's backoff on every drain attempt, and
 * turns wait in the outbox meanwhile.
 */
import type { Kafka } from 'kafkajs';
import type { TopicId, TopicNaming, Turn, WeightVersion } from '../schemas/index.ts';
import {
  createEventCodecs,
  createKafka,
  ensureTopics,
  EventProducer,
  followTopic,
  type EventCodecs,
  type Follower,
  type OutgoingEvent,
  type OutboxRecord,
  type ConnectionSecurity,
  maxValueBytes,
} from '../streams/index.ts';
import { type Logger, ErrorCodes, TurnstreamError, retry } from '../core/index.ts';
import { hostname } from 'node:os';

export interface KafkaLinkOptions {
  /** Bootstrap servers. */
  brokers: string[];
  /** Confluent-compatible registry URL. */
  registryUrl: string;
  /** TLS and logins of Kafka and the registry. @default plaintext, no login */
  security?: ConnectionSecurity;
  /** Topic prefix (tests isolate themselves with one). @default {} */
  naming?: TopicNaming;
  /** A prebuilt kafkajs client (tests route it through a cuttable socket). @default createKafka({ brokers }) */
  kafka?: Kafka;
  /** @default 'turnstream-gateway' */
  clientId?: string;
  /** Bound on one send (then the outbox retries). @default 10000 */
  sendTimeoutMs?: number;
  /** Partitions of topics the gateway creates. @default 6 */
  partitions?: number;
  /**
   * Called once when Kafka or the registry refuses this gateway's settings (a SASL login, basic
   * auth, a certificate not trusted): a failure no retry fixes. Turns wait in the outbox
   * meanwhile; the `gateway` command ends with the error's one line. @default log it only
   */
  onSettingError?: (err: TurnstreamError) => void;
}

/** A failure of the connection's settings, not of Kafka being away (see the client factories). */
const isSettingError = (err: unknown): err is TurnstreamError =>
  err instanceof TurnstreamError && err.code === ErrorCodes.INVALID_INPUT && !err.retriable;

export class KafkaLink {
  readonly kafka: Kafka;
  private codecs: EventCodecs | null = null;
  private producer: EventProducer | null = null;
  private connecting: Promise<EventProducer> | null = null;
  private readonly followers: Follower[] = [];
  private closed = false;
  /** Stops the follow retries. */
  private readonly closing = new AbortController();
  /** The last send succeeded. */
  connected = false;

  constructor(
    private readonly opts: KafkaLinkOptions,
    private readonly logger: Logger,
    private readonly onState?: (connected: boolean) => void,
  ) {
    this.kafka =
      opts.kafka ??
      createKafka({
        brokers: opts.brokers,
        clientId: opts.clientId ?? 'turnstream-gateway',
        logger: logger.child({ component: 'kafka' }),
        retries: 2,
        security: opts.security?.kafka,
      });
  }

  private setConnected(v: boolean): void {
    if (this.connected !== v) this.logger.info({ connected: v }, v ? 'kafka reachable' : 'kafka unreachable; turns wait in the outbox');
    this.connected = v;
    this.onState?.(v);
  }

  /** Codecs (schemas registered) and topics, once. */
  async ensureCodecs(): Promise<EventCodecs> {
    if (!this.codecs) {
      const codecs = await createEventCodecs({
        registryUrl: this.opts.registryUrl,
        registrySecurity: this.opts.security?.registry,
        naming: this.opts.naming,
      });
      await ensureTopics(this.kafka, {
        naming: this.opts.naming,
        partitions: this.opts.partitions,
        ids: ['turns', 'feedback', 'weights', 'dlq'],
      });
      this.codecs = codecs;
    }
    return this.codecs;
  }

  private async ensureProducer(): Promise<EventProducer> {
    if (this.producer) return this.producer;
    if (this.closed) throw new TurnstreamError(ErrorCodes.UNAVAILABLE, 'the Kafka link is closed');
    this.connecting ??= (async () => {
      try {
        const codecs = await this.ensureCodecs();
        const p = new EventProducer(this.kafka, codecs, { timeoutMs: this.opts.sendTimeoutMs ?? 10_000, retries: 3 });
        await p.connect();
        this.producer = p;
        return p;
      } finally {
        this.connecting = null;
      }
    })();
    return this.connecting;
  }

  /** Connects in the background so readiness reflects Kafka before the first turn; failures are retried by the outbox. */
  warmUp(): void {
    this.ensureProducer().then(
      () => this.setConnected(true),
      (err: unknown) => {
        if (!isSettingError(err)) {
          this.logger.warn({ err: (err as Error).message }, 'kafka not reachable yet; turns wait in the outbox');
          return;
        }
        this.logger.error(
          { err: err.message, setting: err.param },
          'kafka or the registry refuses these settings; turns wait in the outbox',
        );
        this.opts.onSettingError?.(err);
      },
    );
  }

  /** The outbox's sender: one batch, in order, acknowledged by all in-sync replicas. */
  readonly send = async (records: OutboxRecord[]): Promise<void> => {
    try {
      // A refused connection is no fault of the records: retriable for the outbox, which keeps them.
      const p = await this.ensureProducer().catch((err: unknown) => {
        throw isSettingError(err) ? new TurnstreamError(ErrorCodes.UNAVAILABLE, err.message, { cause: err, retriable: true }) : err;
      });
      await p.sendAll(records.map((r) => ({ id: r.topic as TopicId, key: r.key, value: r.value, headers: r.headers }) as OutgoingEvent));
      this.setConnected(true);
    } catch (err) {
      this.setConnected(false);
      throw err;
    }
  };

  /**
   * The outbox's dead-letter sender: a record Kafka refuses for good (too large, not
   * encodable) becomes a DeadLetter on the DLQ topic, with the record itself when it fits there
   * and, always, where the gateway keeps it whole.
   */
  readonly deadLetter = async (record: OutboxRecord, error: TurnstreamError, keptIn: string): Promise<void> => {
    const p = await this.ensureProducer();
    const codecs = await this.ensureCodecs();
    const raw = Buffer.from(JSON.stringify(record.value), 'utf8');
    await p.send('dlq', record.key, {
      topic: codecs.topic(record.topic as TopicId),
      partition: -1,
      offset: `outbox:${record.seq}`,
      key: Buffer.from(record.key, 'utf8'),
      // The JSON of the event as the gateway held it, when it fits the DLQ topic.
      value: raw.length <= maxValueBytes('dlq') - 64 * 1024 ? raw : null,
      code: error.code,
      message: `${error.message} (kept whole in ${keptIn} on ${hostname()})`.slice(0, 4000),
      stage: 'gateway-outbox',
      failedAt: Date.now(),
      attempts: 1,
    });
  };

  /**
   * Follows the weights topic (a fresh consumer group per gateway, from the beginning: the
   * topic is compacted, so this is the latest version of each model). Retries in the
   * background until Kafka is reachable.
   */
  followWeights(onVersion: (wv: WeightVersion) => Promise<void> | void): void {
    this.follow('weights', (codecs) =>
      followTopic(this.kafka, codecs, 'weights', { fromBeginning: true, logger: this.logger, onEvent: (wv) => onVersion(wv) }),
    );
  }

  /**
   * Follows the turns topic (a fresh group per gateway) from `windowMs` ago, so that this
   * instance knows the turns every instance served: session inference and feedback by turn id
   * then work behind a load balancer without affinity, and after a restart.
   */
  followTurns(onTurn: (turn: Turn) => void, windowMs: number): void {
    this.follow('turns', (codecs) =>
      followTopic(this.kafka, codecs, 'turns', {
        fromBeginning: false,
        startAt: Date.now() - windowMs,
        logger: this.logger,
        onEvent: (t) => onTurn(t),
      }),
    );
  }

  /** Starts a follower, retrying in the background until Kafka is reachable. */
  private follow(what: TopicId, start: (codecs: EventCodecs) => Promise<Follower>): void {
    void retry(
      async () => {
        const follower = await start(await this.ensureCodecs());
        if (this.closed) await follower.stop();
        else this.followers.push(follower);
      },
      {
        baseMs: 500,
        maxMs: 10_000,
        signal: this.closing.signal,
        retryIf: () => !this.closed,
        onRetry: (err, attempt) => this.logger.warn({ err: (err as Error).message, attempt }, `cannot follow the ${what} topic yet`),
      },
    ).catch((err: unknown) => {
      if (!this.closed) this.logger.error({ err: (err as Error).message }, `gave up following the ${what} topic`);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.closing.abort();
    // A connect in flight (warm-up or drain) must not leave a producer behind.
    await this.connecting?.catch(() => undefined);
    await Promise.all(this.followers.map((f) => f.stop().catch((err: unknown) => this.logger.warn({ err }, 'follower stop failed'))));
    await this.producer?.disconnect().catch((err: unknown) => this.logger.warn({ err }, 'producer disconnect failed'));
  }
}

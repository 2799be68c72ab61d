/**
 * What reached each stage, seen from outside: a read_committed follower per topic that keeps
 * every decoded record (by partition and offset, so a follower restarted by a broker outage
 * does not count a record twice), and the ClickHouse tables read with FINAL.
 */
import type { Kafka } from 'kafkajs';
import type { AnalyticsStore } from '../../warehouse/index.ts';
import type { DeadLetter, Judgement, Sample, Turn, TurnPair, WeightVersion } from '../../schemas/index.ts';
import { followTopic, type EventCodecs, type Follower } from '../../streams/index.ts';
import type { Logger } from '../../core/index.ts';

export interface Seen {
  turns: Map<string, Turn>;
  pairs: Map<string, TurnPair>;
  judgements: Map<string, Judgement>;
  samples: Map<string, Sample>;
  weights: Map<string, WeightVersion>;
  dlq: Map<string, DeadLetter>;
}

export class Observer {
  readonly seen: Seen = {
    turns: new Map(),
    pairs: new Map(),
    judgements: new Map(),
    samples: new Map(),
    weights: new Map(),
    dlq: new Map(),
  };
  private readonly followers: Follower[] = [];

  private constructor(
    private readonly store: AnalyticsStore,
    private readonly logger: Logger,
  ) {}

  /** Starts following every topic the stages write. */
  static async start(kafka: Kafka, codecs: EventCodecs, store: AnalyticsStore, logger: Logger): Promise<Observer> {
    const o = new Observer(store, logger);
    for (const id of Object.keys(o.seen) as Array<keyof Seen>) {
      const map = o.seen[id] as Map<string, unknown>;
      o.followers.push(
        await followTopic(kafka, codecs, id, {
          fromBeginning: true,
          logger,
          onEvent: (value, meta) => void map.set(`${meta.partition}:${meta.offset}`, value),
        }),
      );
    }
    return o;
  }

  /** The records of `id` whose session starts with `prefix`. */
  of<K extends keyof Seen>(id: K, prefix: string): Array<Seen[K] extends Map<string, infer V> ? V : never> {
    const all = [...(this.seen[id] as Map<string, unknown>).values()];
    const session = (v: unknown): string => {
      const x = v as { sessionId?: string; key?: Buffer | null };
      if (x.sessionId !== undefined) return x.sessionId;
      return x.key ? x.key.toString('utf8') : '';
    };
    return all.filter((v) => session(v).startsWith(prefix)) as never;
  }

  /** Turn ids in ClickHouse for sessions starting with `prefix`, with their row count after FINAL. */
  async clickhouseTurns(prefix: string): Promise<Map<string, number>> {
    try {
      const rows = await this.store.rows<{ turn_id: string; n: number }>(
        `SELECT turn_id, count() AS n FROM ${this.store.tables.turns} FINAL WHERE startsWith(session_id, '${prefix.replace(/'/g, "\\'")}') GROUP BY turn_id`,
      );
      return new Map(rows.map((r) => [r.turn_id, Number(r.n)]));
    } catch (err) {
      this.logger.debug({ err: (err as Error).message }, 'ClickHouse not answering yet');
      return new Map();
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.followers.map((f) => f.stop().catch(() => undefined)));
  }
}

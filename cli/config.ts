/**
 * The one place that reads the environment (and a `.env` file). Everything else receives
 * typed options. Every value has a default that works on one machine.
 */
import { config as loadDotenv } from 'dotenv';
import { resolve } from 'node:path';

export interface TurnstreamConfig {
  /** Kafka bootstrap servers; when unset the local stack is started. `KAFKA_BROKERS` */
  kafkaBrokers: string | undefined;
  /** Confluent-compatible registry URL. `SCHEMA_REGISTRY_URL` */
  schemaRegistryUrl: string | undefined;
  /** ClickHouse HTTP URL. `CLICKHOUSE_URL` */
  clickhouseUrl: string | undefined;
  /** Folder of the local stack's downloads, data and logs. `TURNSTREAM_HOME` @default ./.turnstream */
  home: string;
  /** Gateway port. `PORT` @default 30000 */
  port: number;
  /** Gateway bind address. `HOST` @default 127.0.0.1 */
  host: string;
  /** `key` or `key:userId`, comma separated; empty = no auth. `TURNSTREAM_API_KEYS` */
  apiKeys: string[];
  /** OpenAI-compatible judge endpoint; unset = embedded judge. `JUDGE_BASE_URL` */
  judgeBaseUrl: string | undefined;
  /** `JUDGE_MODEL` @default judge */
  judgeModel: string;
  /** `JUDGE_API_KEY` */
  judgeApiKey: string | undefined;
  /** Votes per pair. `JUDGE_VOTES` @default 3 */
  judgeVotes: number;
  /** Upstream OpenAI-compatible engine; unset = the built-in tfjs policy. `UPSTREAM_BASE_URL` */
  upstreamBaseUrl: string | undefined;
  /** `UPSTREAM_API_KEY` */
  upstreamApiKey: string | undefined;
  /** `UPSTREAM_MODEL` */
  upstreamModel: string | undefined;
  /** Weight store folder. `TURNSTREAM_WEIGHTS_DIR` @default <home>/weights */
  weightsDir: string;
  /** Session idle timeout in ms. `SESSION_IDLE_TIMEOUT_MS` @default 1_800_000 */
  sessionIdleTimeoutMs: number;
  /** Turn type assumed when a request says none. `DEFAULT_TURN_TYPE` @default main */
  defaultTurnType: 'main' | 'side';
  /** Training method of the sample builder. `TRAIN_METHOD` @default combined */
  trainMethod: 'rl' | 'opd' | 'combined';
  /** pino level. `LOG_LEVEL` @default info */
  logLevel: string;
  /** Topic name prefix (tests isolate themselves with it). `TURNSTREAM_TOPIC_PREFIX` @default '' */
  topicPrefix: string;
  /** Raw environment, for options a service adds later (read only here). */
  env: Readonly<Record<string, string | undefined>>;
}

const num = (v: string | undefined, d: number): number => {
  if (v === undefined || v.trim() === '') return d;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new Error(`expected a number, got "${v}"`);
  return n;
};

/** Reads the configuration from `env` (process.env by default) and `.env`. */
export function loadConfig(env: Record<string, string | undefined> = process.env, cwd = process.cwd()): TurnstreamConfig {
  if (env === process.env) loadDotenv({ path: resolve(cwd, '.env'), quiet: true } as never);
  const home = resolve(cwd, env.TURNSTREAM_HOME ?? '.turnstream');
  const turnType = (env.DEFAULT_TURN_TYPE ?? 'main').toLowerCase();
  const method = (env.TRAIN_METHOD ?? 'combined').toLowerCase();
  return {
    kafkaBrokers: env.KAFKA_BROKERS || undefined,
    schemaRegistryUrl: env.SCHEMA_REGISTRY_URL || undefined,
    clickhouseUrl: env.CLICKHOUSE_URL || undefined,
    home,
    port: num(env.PORT, 30000),
    host: env.HOST ?? '127.0.0.1',
    apiKeys: (env.TURNSTREAM_API_KEYS ?? '').split(',').map((s) => s.trim()).filter(Boolean),
    judgeBaseUrl: env.JUDGE_BASE_URL || undefined,
    judgeModel: env.JUDGE_MODEL ?? 'judge',
    judgeApiKey: env.JUDGE_API_KEY || undefined,
    judgeVotes: num(env.JUDGE_VOTES, 3),
    upstreamBaseUrl: env.UPSTREAM_BASE_URL || undefined,
    upstreamApiKey: env.UPSTREAM_API_KEY || undefined,
    upstreamModel: env.UPSTREAM_MODEL || undefined,
    weightsDir: resolve(cwd, env.TURNSTREAM_WEIGHTS_DIR ?? resolve(home, 'weights')),
    sessionIdleTimeoutMs: num(env.SESSION_IDLE_TIMEOUT_MS, 30 * 60 * 1000),
    defaultTurnType: turnType === 'side' ? 'side' : 'main',
    trainMethod: method === 'rl' || method === 'opd' ? method : 'combined',
    logLevel: env.LOG_LEVEL ?? 'info',
    topicPrefix: env.TURNSTREAM_TOPIC_PREFIX ?? '',
    env: { ...env },
  };
}

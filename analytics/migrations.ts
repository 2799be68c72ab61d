/**
 * Versioned DDL, applied in order on start, each version once (recorded in
 * `schema_migrations`). Statements stay within what ClickHouse 18.16 and current servers
 * both accept: no DateTime64, no LowCardinality, no `ADD COLUMN IF NOT EXISTS`, no query
 * parameters. Timestamps are epoch milliseconds in UInt64 columns (`*_ms`).
 *
 * Every event table is a ReplacingMergeTree ordered by the event's deterministic id, so a
 * re-delivered event collapses into one row; queries read with FINAL.
 */
import type { Tables } from './tables.ts';
import type { AnalyticsStore } from './store.ts';

export interface Migration {
  version: number;
  name: string;
  statements(t: Tables): string[];
}

const ENGINE = (id: string): string => `ENGINE = ReplacingMergeTree() ORDER BY ${id}`;

/** Columns every event table has: where the row came from in Kafka and when it landed. */
const SOURCE = `_topic String, _partition UInt32, _offset UInt64, ingested_at DateTime`;

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'event tables',
    statements: (t) => [
      `CREATE TABLE IF NOT EXISTS ${t.turns} (
        turn_id String, session_id String, session_source String, user_id String, turn_type String,
        session_done UInt8, model String, policy_model_id String, policy_version UInt32,
        requested_at_ms UInt64, completed_at_ms UInt64, latency_ms Float64,
        prompt_tokens UInt32, completion_tokens UInt32, total_tokens UInt32, prompt_truncated_tokens UInt32,
        request_messages UInt32, response_chars UInt32, tool_calls UInt32, finish_reason String,
        tokenized UInt8, gateway_id String, event String, ${SOURCE}
      ) ${ENGINE('turn_id')}`,
      `CREATE TABLE IF NOT EXISTS ${t.feedback} (
        feedback_id String, session_id String, turn_id String, user_id String,
        has_rating UInt8, rating Int8, text String, created_at_ms UInt64, ${SOURCE}
      ) ${ENGINE('feedback_id')}`,
      `CREATE TABLE IF NOT EXISTS ${t.pairs} (
        pair_id String, session_id String, user_id String, policy_model_id String, policy_version UInt32,
        main_turn_index UInt32, next_state_items UInt32, next_roles String, end_marker String,
        feedback_count UInt32, feedback_rating_sum Int32, history_verified UInt8,
        requested_at_ms UInt64, created_at_ms UInt64, tag String, ${SOURCE}
      ) ${ENGINE('pair_id')}`,
      `CREATE TABLE IF NOT EXISTS ${t.judgements} (
        judgement_id String, turn_id String, session_id String, user_id String, policy_version UInt32,
        judge_id String, score Int8, votes UInt32, votes_valid UInt32, votes_failed UInt32, votes_agree UInt32,
        vote_latency_ms_avg Float64, vote_latency_ms_max Float64, vote_attempts UInt32, has_hint UInt8,
        created_at_ms UInt64, tag String, votes_json String, ${SOURCE}
      ) ${ENGINE('judgement_id')}`,
      `CREATE TABLE IF NOT EXISTS ${t.samples} (
        sample_id String, turn_id String, session_id String, user_id String, policy_model_id String,
        policy_version UInt32, method String, reward Float64, weight Float64,
        prompt_length UInt32, response_length UInt32, trained_tokens UInt32, has_teacher UInt8,
        judge_id String, created_at_ms UInt64, tag String, ${SOURCE}
      ) ${ENGINE('sample_id')}`,
      `CREATE TABLE IF NOT EXISTS ${t.weights} (
        weight_id String, model_id String, version UInt32, parent_version Int64, uri String, sha256 String,
        format String, base_model String, loss Float64, mean_reward Float64, kl Float64, clip_fraction Float64,
        samples UInt64, tokens UInt64, logprob_drift Float64, dropped_stale UInt64, steps UInt64,
        created_at_ms UInt64, event String, ${SOURCE}
      ) ${ENGINE('weight_id')}`,
      `CREATE TABLE IF NOT EXISTS ${t.dlq} (
        dlq_id String, topic String, partition UInt32, offset String, code String, stage String, message String,
        failed_at_ms UInt64, attempts UInt32, key String, value_bytes UInt32, value_base64 String, ${SOURCE}
      ) ${ENGINE('dlq_id')}`,
    ],
  },
];

export interface MigrationResult {
  /** Versions applied by this call. */
  applied: number[];
  /** The schema version now. */
  version: number;
  /** The server's version string. */
  server: string;
}

/** Creates the database and ledger, then applies every migration not yet recorded. */
export async function migrate(store: AnalyticsStore, migrations: readonly Migration[] = MIGRATIONS): Promise<MigrationResult> {
  const t = store.tables;
  await store.command(`CREATE DATABASE IF NOT EXISTS \`${store.options.database}\``);
  await store.command(
    `CREATE TABLE IF NOT EXISTS ${t.migrations} (version UInt32, name String, applied_at DateTime) ENGINE = ReplacingMergeTree() ORDER BY version`,
  );
  const done = new Set((await store.rows<{ version: number }>(`SELECT version FROM ${t.migrations} FINAL`)).map((r) => Number(r.version)));
  const applied: number[] = [];
  for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
    if (done.has(m.version)) continue;
    // Statements are idempotent (IF NOT EXISTS), so two services migrating at once agree.
    for (const sql of m.statements(t)) await store.command(sql);
    await store.insert(t.migrations, [{ version: m.version, name: m.name, applied_at: Math.floor(Date.now() / 1000) }]);
    applied.push(m.version);
  }
  const version = Math.max(0, ...migrations.map((m) => m.version));
  return { applied, version, server: await store.version() };
}

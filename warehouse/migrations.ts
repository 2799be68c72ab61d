/**
 * Versioned DDL, applied in order on start, each version once (recorded in
 * `schema_migrations`). Statements stay within what ClickHouse 18.16 and current servers
 * both accept: no DateTime64, no LowCardinality, no `ADD COLUMN IF NOT EXISTS`, no query
 * parameters. Timestamps are epoch milliseconds in UInt64 columns (`*_ms`).
 *
 * Every event table is a ReplacingMergeTree ordered by the event's deterministic id (and, for
 * the tables a replay writes to, its replay tag: version 2), so a re-delivered event collapses
 * into one row; queries read with FINAL.
 */
import type { AnalyticsStore } from './client.ts';
import { REPLAY_KEYS, type TableId, type Tables } from './tables.ts';

export interface Migration {
  version: number;
  name: string;
  /** Idempotent DDL, run in order. */
  statements(t: Tables): string[];
  /** Steps that need to look at the server first (run after `statements`); must be idempotent too. */
  apply?(store: AnalyticsStore): Promise<void>;
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
  {
    version: 2,
    name: 'replay_tag in the key of the derived tables',
    statements: () => [],
    apply: async (store) => {
      for (const [table, id] of REPLAY_KEYS) await addReplayTag(store, table, id);
    },
  },
  {
    version: 3,
    name: 'rewards (gym rollouts and their outcomes) and the request metadata of turns',
    statements: (t) => [
      `CREATE TABLE IF NOT EXISTS ${t.rewards} (
        reward_id String, session_id String, user_id String, source String, reward Float64, passed Int8,
        detail String, turn_count UInt32, policy_model_id String, policy_version Int64, suite String, task_id String, group_id String,
        batch_id String, rollout_index Int32, group_size UInt32, split String, created_at_ms UInt64, ${SOURCE}
      ) ${ENGINE('reward_id')}`,
    ],
    apply: async (store) => {
      if ((await columnsOf(store, 'turns')).includes('metadata')) return;
      try {
        await store.command(`ALTER TABLE ${store.tables.turns} ADD COLUMN metadata String`);
      } catch (err) {
        // Another service migrating at the same time added it first (no IF NOT EXISTS on 18.16).
        if (!(await columnsOf(store, 'turns')).includes('metadata')) throw err;
      }
    },
  },
  {
    version: 4,
    name: 'the rollout/trainer mismatch and step time of each version; the verdict parts of each reward',
    statements: () => [],
    apply: async (store) => {
      await addColumns(store, 'weights', [
        ['mismatch_kl', 'Float64'],
        ['tis_mean', 'Float64 DEFAULT 1'],
        ['tis_truncated', 'Float64'],
        ['step_seconds', 'Float64'],
      ]);
      await addColumns(store, 'rewards', [['parts', 'String']]);
    },
  },
];

/** Adds the columns a table lacks (no IF NOT EXISTS on 18.16; another service may add them first). */
async function addColumns(store: AnalyticsStore, table: TableId, columns: ReadonlyArray<readonly [string, string]>): Promise<void> {
  for (const [name, type] of columns) {
    if ((await columnsOf(store, table)).includes(name)) continue;
    try {
      await store.command(`ALTER TABLE ${store.tables[table]} ADD COLUMN ${name} ${type}`);
    } catch (err) {
      if (!(await columnsOf(store, table)).includes(name)) throw err;
    }
  }
}

/** The table's insertable column names, in order (AnalyticsStore.columns). */
async function columnsOf(store: AnalyticsStore, table: TableId): Promise<string[]> {
  return (await store.columns(store.tables[table])).map((c) => c.name);
}

/**
 * Adds `replay_tag` to a table and to the end of its sorting key, in one ALTER: metadata
 * only, no copy, nothing inserted meanwhile is lost, and existing rows (all live until now)
 * read '' and keep their order. Both 18.16 and current servers accept it only for a column
 * added in the same ALTER *without* a DEFAULT expression, so the column takes String's own
 * default, ''. The primary index stays `id`; rows now collapse per (id, replay_tag).
 *
 * Rows a sink stored from a tagged topic family before this version (only possible by giving
 * the sink a tagged family's codecs) have `tag` ≠ '' but `replay_tag` = '': they are copied
 * under their tag and the stale copies deleted, so they do not pass for live rows.
 */
async function addReplayTag(store: AnalyticsStore, table: TableId, id: string): Promise<void> {
  const t = store.tables[table];
  if (!(await columnsOf(store, table)).includes('replay_tag')) {
    try {
      await store.command(`ALTER TABLE ${t} ADD COLUMN replay_tag String, MODIFY ORDER BY (${id}, replay_tag)`);
    } catch (err) {
      // Another service migrating at the same time added it first (no IF NOT EXISTS on 18.16).
      if (!(await columnsOf(store, table)).includes('replay_tag')) throw err;
    }
  }
  const all = await columnsOf(store, table);
  if (!all.includes('tag')) return;
  const [legacy] = await store.rows<{ n: number }>(`SELECT count() AS n FROM ${t} WHERE tag != '' AND replay_tag = ''`);
  if (Number(legacy?.n ?? 0) === 0) return;
  const columns = all.filter((c) => c !== 'replay_tag').map((c) => `\`${c}\``);
  // No `tag AS replay_tag`: ClickHouse would substitute the alias into the WHERE clause.
  await store.command(
    `INSERT INTO ${t} (${columns.join(', ')}, replay_tag) SELECT ${columns.join(', ')}, tag FROM ${t} FINAL WHERE tag != '' AND replay_tag = ''`,
  );
  await store.command(`ALTER TABLE ${t} DELETE WHERE tag != '' AND replay_tag = ''`);
  // The delete is a mutation, done in the background (18.16 cannot wait for it): wait here a
  // while, so the stale copies are gone before the first live query. Harmless if it is slower.
  for (let i = 0; i < 100; i++) {
    const [left] = await store.rows<{ n: number }>(`SELECT count() AS n FROM ${t} WHERE tag != '' AND replay_tag = ''`);
    if (Number(left?.n ?? 0) === 0) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

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
    await m.apply?.(store);
    await store.insert(t.migrations, [{ version: m.version, name: m.name, applied_at: Math.floor(Date.now() / 1000) }]);
    applied.push(m.version);
  }
  const version = Math.max(0, ...migrations.map((m) => m.version));
  return { applied, version, server: await store.version() };
}

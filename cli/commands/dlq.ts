/**
 * `turnstream dlq list|show|replay`: the dead letters of the pipeline (`turnstream.dlq.v1`), and
 * re-sending them to their original topics once their cause is fixed (streams/dead-letter-replay.ts:
 * each letter at most once, marked in the same transaction as the re-sent record).
 *
 * Kafka, the registry and the streams code load inside the actions: `turnstream --help` and the
 * other commands do not pay for them.
 */
import type { Command } from 'commander';
import { ErrorCodes, invalidInput } from '../../core/index.ts';
import type { DeadLetterFilter, StoredDeadLetter } from '../../streams/index.ts';
import { loadConfig } from '../config.ts';

/** The filter flags every sub-command takes. */
export interface DlqFilterFlags {
  stage?: string;
  code?: string;
  topic?: string;
  since?: string;
  until?: string;
}

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--since` / `--until`: ISO-8601, epoch milliseconds, or a span before now (`90s`, `30m`, `2h`, `7d`). */
export function parseTime(text: string, flag: string, now = Date.now()): number {
  const s = text.trim();
  const span = /^(\d+)([smhd])$/.exec(s);
  if (span) return now - Number(span[1]) * UNITS[span[2]];
  if (/^\d{10,}$/.test(s)) return Number(s);
  const at = /^\d{4}-\d{2}-\d{2}/.test(s) ? Date.parse(s) : NaN;
  if (!Number.isFinite(at))
    throw invalidInput(`${flag} must be a time (ISO-8601, epoch ms) or a span before now (30m, 2h, 7d); got ${JSON.stringify(text)}`, flag);
  return at;
}

/**
 * The filter the flags name. `topics` maps a topic id (`pairs`) to its name in this family; a
 * full topic name is taken as it is if it is one of the family's.
 */
export function dlqFilter(f: DlqFilterFlags, topics: ReadonlyMap<string, string>, now = Date.now()): DeadLetterFilter {
  const filter: DeadLetterFilter = {};
  if (f.stage !== undefined) {
    if (!/^[a-z][a-z0-9-]*$/.test(f.stage))
      throw invalidInput(`--stage must be a stage name such as judge; got ${JSON.stringify(f.stage)}`, '--stage');
    filter.stage = f.stage;
  }
  if (f.code !== undefined) {
    const codes = Object.values(ErrorCodes) as string[];
    if (!codes.includes(f.code))
      throw invalidInput(`--code must be an error code (${codes.join(', ')}); got ${JSON.stringify(f.code)}`, '--code');
    filter.code = f.code;
  }
  if (f.topic !== undefined) {
    const name = topics.get(f.topic) ?? ([...topics.values()].includes(f.topic) ? f.topic : undefined);
    if (!name)
      throw invalidInput(
        `--topic must be a topic (${[...topics.keys()].join(', ')}, or its full name); got ${JSON.stringify(f.topic)}`,
        '--topic',
      );
    filter.topic = name;
  }
  if (f.since !== undefined) filter.since = parseTime(f.since, '--since', now);
  if (f.until !== undefined) filter.until = parseTime(f.until, '--until', now);
  if (filter.since !== undefined && filter.until !== undefined && filter.since >= filter.until)
    throw invalidInput('--since must be before --until', '--since');
  return filter;
}

/** Ids as given on the command line: whole ids or prefixes of at least 6 characters. */
export function checkIds(ids: readonly string[]): string[] {
  for (const id of ids)
    if (!/^[0-9a-f-]{6,36}$/.test(id))
      throw invalidInput(`a dead letter id is 6 to 36 characters of 0-9, a-f and -; got ${JSON.stringify(id)}`, 'id');
  return [...ids];
}

/** Each id names exactly one letter among `letters` (all of the family's). */
export function resolveIds(ids: readonly string[], letters: readonly StoredDeadLetter[]): string[] {
  return ids.map((id) => {
    const hits = letters.filter((l) => l.id.startsWith(id));
    if (hits.length === 0) throw invalidInput(`no dead letter has the id ${id} (turnstream dlq list shows them)`, 'id');
    if (hits.length > 1) throw invalidInput(`the id ${id} names ${hits.length} dead letters; give more of it`, 'id');
    return hits[0].id;
  });
}

const time = (ms: number): string => new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
const oneLine = (s: string, max: number): string => {
  const t = s.replace(/\s+/g, ' ').trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
};

/** One line per letter, under a header. */
export function letterTable(letters: readonly StoredDeadLetter[]): string {
  if (letters.length === 0) return 'no dead letters\n';
  const rows = letters.map((l) => [
    l.id.slice(0, 12),
    time(l.failedAt),
    l.stage,
    l.code,
    `${l.topic}[${l.partition}]@${l.offset}`,
    l.replayedAt === null ? '-' : time(l.replayedAt),
    oneLine(l.message, 80),
  ]);
  const head = ['ID', 'FAILED AT (UTC)', 'STAGE', 'CODE', 'RECORD', 'REPLAYED', 'MESSAGE'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r: string[]): string =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return `${[line(head), ...rows.map(line)].join('\n')}\n`;
}

/** A letter as JSON (bytes as base64). */
export function letterJson(l: StoredDeadLetter): Record<string, unknown> {
  return {
    id: l.id,
    stage: l.stage,
    code: l.code,
    message: l.message,
    topic: l.topic,
    partition: l.partition,
    offset: l.offset,
    failed_at: new Date(l.failedAt).toISOString(),
    attempts: l.attempts,
    key: l.key?.toString('utf8') ?? null,
    value_bytes: l.value?.length ?? 0,
    replayed_at: l.replayedAt === null ? null : new Date(l.replayedAt).toISOString(),
    dlq: { partition: l.dlqPartition, offset: l.dlqOffset },
  };
}

function addFilterOptions(cmd: Command): Command {
  return cmd
    .option('--stage <stage>', 'only letters of this stage (session-assembler, judge, sample-builder, clickhouse-sink, gateway, …)')
    .option('--code <code>', 'only letters with this error code (TS_ERR_…)')
    .option('--topic <topic>', 'only letters of records from this topic: its id (turns, pairs, …) or full name')
    .option('--since <time>', 'only letters that failed at or after this time: ISO-8601, epoch ms, or a span before now (30m, 2h, 7d)')
    .option('--until <time>', 'only letters that failed before this time (same forms)');
}

/** Kafka, the family's codecs and its topic names, loaded when a sub-command runs. */
async function connect(): Promise<{
  kafka: import('kafkajs').Kafka;
  codecs: import('../../streams/index.ts').EventCodecs;
  topics: Map<string, string>;
  streams: typeof import('../../streams/index.ts');
  logger: import('../../core/index.ts').Logger;
}> {
  const config = loadConfig();
  const [streams, infra, schemas, core] = await Promise.all([
    import('../../streams/index.ts'),
    import('../../infra/index.ts'),
    import('../../schemas/index.ts'),
    import('../../core/index.ts'),
  ]);
  const endpoints = infra.endpointsOf(
    infra.resolveStackOptions({ home: config.home, kafkaBrokers: config.kafkaBrokers, schemaRegistryUrl: config.schemaRegistryUrl }),
  );
  const naming = { prefix: config.topicPrefix };
  const logger = core.createLogger('dlq', 'warn');
  const kafka = streams.createKafka({
    brokers: streams.parseBrokers(endpoints.brokers),
    clientId: 'turnstream-dlq',
    logger: core.createLogger('kafka', 'error'),
    security: config.security.kafka,
  });
  await streams.ensureTopics(kafka, { naming, ids: ['dlq', 'dlqReplays'] });
  const codecs = await streams.createEventCodecs({
    registryUrl: endpoints.registryUrl,
    registrySecurity: config.security.registry,
    naming,
  });
  const topics = new Map((Object.keys(schemas.TOPICS) as Array<keyof typeof schemas.TOPICS>).map((id) => [id, codecs.topic(id)]));
  return { kafka, codecs, topics, streams, logger };
}

export function register(program: Command): void {
  const dlq = program
    .command('dlq')
    .description('dead letters: list them, show one, re-send them to their original topic once the cause is fixed (each at most once)');

  addFilterOptions(
    dlq.command('list').description('the dead letters, oldest first, with their id, stage, code, record and whether re-sent'),
  )
    .option('--pending', 'only letters not re-sent yet')
    .option('--json', 'one JSON object: { letters: [...] }')
    .action(async (flags: DlqFilterFlags & { pending?: boolean; json?: boolean }) => {
      const c = await connect();
      const filter = dlqFilter(flags, c.topics);
      const letters = (await c.streams.readDeadLetters(c.kafka, c.codecs, filter)).filter((l) => !flags.pending || l.replayedAt === null);
      process.stdout.write(flags.json ? `${JSON.stringify({ letters: letters.map(letterJson) })}\n` : letterTable(letters));
    });

  dlq
    .command('show')
    .description('one dead letter in full, with its original record decoded where its topic is one of this family')
    .argument('<id>', 'the id, or a unique prefix of at least 6 characters')
    .option('--json', 'one JSON object')
    .action(async (given: string, flags: { json?: boolean }) => {
      const [prefix] = checkIds([given]);
      const c = await connect();
      const all = await c.streams.readDeadLetters(c.kafka, c.codecs);
      const [id] = resolveIds([prefix], all);
      const letter = all.find((l) => l.id === id)!;
      const topicId = c.codecs.idOf(letter.topic);
      let record: unknown = null;
      let undecodable: string | null = null;
      if (letter.value && topicId) {
        try {
          record = await c.codecs.of(topicId).decode(letter.value);
        } catch (err) {
          undecodable = (err as Error).message;
        }
      } else undecodable = letter.value ? `${letter.topic} is not a topic of this family` : 'the letter has no value';
      const out = { ...letterJson(letter), record, ...(undecodable ? { undecodable } : {}) };
      process.stdout.write(`${JSON.stringify(out, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v), flags.json ? 0 : 2)}\n`);
    });

  addFilterOptions(
    dlq
      .command('replay')
      .alias('retry')
      .description("re-send dead letters' original records to their original topics, each at most once (by ids, filters, or --all)")
      .argument('[ids...]', 'ids or unique prefixes (at least 6 characters); with filters, only those that match both'),
  )
    .option('--all', 'every letter not re-sent yet (needed when no id and no filter is given)')
    .option('--dry-run', 'list what would be re-sent, send nothing')
    .option('--json', 'one JSON object: { replayed: [...], skipped: [...] }')
    .action(async (ids: string[], flags: DlqFilterFlags & { all?: boolean; dryRun?: boolean; json?: boolean }) => {
      const given = checkIds(ids);
      const named =
        given.length > 0 || ['stage', 'code', 'topic', 'since', 'until'].some((k) => flags[k as keyof DlqFilterFlags] !== undefined);
      if (!named && !flags.all)
        throw invalidInput('name the letters to re-send: ids, a filter (--stage, --code, --topic, --since, --until) or --all', 'ids');
      const c = await connect();
      const filter = dlqFilter(flags, c.topics);
      if (given.length > 0) filter.ids = resolveIds(given, await c.streams.readDeadLetters(c.kafka, c.codecs));
      const result = await c.streams.replayDeadLetters(c.kafka, c.codecs, filter, { logger: c.logger, dryRun: flags.dryRun });
      if (flags.json) {
        process.stdout.write(
          `${JSON.stringify({
            dry_run: !!flags.dryRun,
            replayed: result.replayed.map(letterJson),
            skipped: result.skipped.map((s) => ({ ...letterJson(s.letter), reason: s.reason })),
          })}\n`,
        );
        return;
      }
      const verb = flags.dryRun ? 'would re-send' : 're-sent';
      const lines = [
        `${verb} ${result.replayed.length} dead letter${result.replayed.length === 1 ? '' : 's'}${result.skipped.length ? `, skipped ${result.skipped.length}` : ''}`,
        ...result.replayed.map((l) => `  ${verb} ${l.id.slice(0, 12)}  ${l.stage}  ${l.code}  → ${l.topic}`),
        ...result.skipped.map((s) => `  skipped ${s.letter.id.slice(0, 12)}  ${s.reason}`),
      ];
      process.stdout.write(`${lines.join('\n')}\n`);
    });
}

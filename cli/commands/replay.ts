/**
 * `turnstream replay --from <time|offset> [--to …] [--config FILE] --tag NAME [--json]`: re-derives
 * pairs, judgements and samples from a range of history with another configuration, into
 * `turnstream.replay.<tag>.*` topics. See history/replay.ts (how it runs and ends) and
 * history/replay-config.ts (the config file).
 */
import type { Command } from 'commander';
import cliProgress from 'cli-progress';
import { resolve } from 'node:path';
import { endpointsOf, resolveStackOptions } from '../../infra/index.ts';
import { createEmbeddedJudge, createLlmJudge, loadTeacher, type Judge, type SampleBuilderOptions } from '../../processors/index.ts';
import { loadReplayConfig, parseBound, runReplay, type ReplayConfig, type ReplaySummary } from '../../history/index.ts';
import { createKafka, parseBrokers } from '../../streams/index.ts';
import { createLogger, invalidInput } from '../../core/index.ts';
import { loadConfig, type TurnstreamConfig } from '../config.ts';

/** The judge a replay uses: the config file's settings over the live ones. */
export function replayJudge(config: TurnstreamConfig, file: ReplayConfig): Judge {
  const j = file.judge ?? {};
  const mode = j.mode ?? file.samples?.method ?? config.trainMethod;
  const baseUrl = j.baseUrl !== undefined ? j.baseUrl : config.judge.baseUrl;
  if (!baseUrl) return createEmbeddedJudge({ mode, id: j.id });
  return createLlmJudge({
    baseUrl,
    model: j.model ?? config.judge.model,
    apiKey: j.apiKey ?? config.judge.apiKey,
    mode,
    votes: j.votes ?? config.judge.votes,
    hintVotes: j.hintVotes ?? config.judge.hintVotes,
    temperature: j.temperature,
    maxTokens: j.maxTokens,
    timeoutMs: j.timeoutMs ?? config.judge.timeoutMs,
    retries: j.retries,
    id: j.id,
  });
}

export async function replaySamples(config: TurnstreamConfig, file: ReplayConfig): Promise<SampleBuilderOptions> {
  const s = file.samples ?? {};
  const method = s.method ?? config.trainMethod;
  const t = s.teacher ?? 'none';
  const teacher =
    t === 'none' || method === 'rl'
      ? undefined
      : await loadTeacher({
          weightsDir: config.weightsDir,
          upstream: t === 'policy' ? undefined : { baseUrl: t.baseUrl, model: t.model ?? 'teacher', apiKey: t.apiKey },
        });
  return { method, teacher, topK: s.topK ?? 0, maskedEndSamples: s.maskedEndSamples };
}

const HELP = `
--from/--to: an ISO-8601 time (records are found by their timestamp; imported turns keep
their original time), an offset N of every partition of the turns topic, or P:O,P:O per
partition. Without --to: the history as it is when the replay starts.

--config FILE (JSON, every field optional; left out = the live setting):
  {"judge":   {"baseUrl": "http://…/v1" | null (embedded), "model", "apiKey",
               "mode": "rl|opd|combined", "votes": 3, "hintVotes": 1, "temperature": 0.6,
               "maxTokens": 1024, "timeoutMs": 60000, "retries": 2, "id": "…",
               "judgeUntrainable": true},
   "session": {"idleTimeoutMs": 1800000, "endPolicy": "masked|drop", "feedbackGraceMs": 5000},
   "samples": {"method": "rl|opd|combined", "maskedEndSamples": true, "topK": 0,
               "teacher": "none" (default) | "policy" | {"baseUrl", "model", "apiKey"}},
   "concurrency": 64, "batchSize": 2000}

Outputs go to turnstream.replay.<tag>.{session-state,pairs,judgements,samples,dlq}.v1 under
consumer groups turnstream.<service>.<tag>; the live topics are only read. The replay ends by
itself once all three stages have caught up with the range. Interrupted (Ctrl-C, crash)? Run the
same command again: it resumes (the range is kept in <home>/replays/<tag>.json). A tag that has
finished replays nothing more; use a new tag for a new replay.
Imported turns are untokenized: they get judgements (scores, analytics) but no samples.
`;

function printSummary(s: ReplaySummary): void {
  const w = (l: string) => process.stdout.write(`${l}\n`);
  w(
    `replay ${s.tag}${s.resumed ? ' (resumed)' : ''}${s.interrupted ? ' (interrupted)' : ''}: ${s.range.turns} turns, ${s.range.feedback} feedback in range, ${(s.durationMs / 1000).toFixed(1)} s`,
  );
  w(`  pairs       ${s.pairs.total} (${s.pairs.withNextState} with a next state) ${JSON.stringify(s.pairs.byEnd)}`);
  w(
    `  judgements  ${s.judgements.total} by score ${JSON.stringify(s.judgements.byScore)}, ${s.judgements.votes} valid votes, ${s.judgements.withoutVotes} with nothing to judge (${s.judgements.judgeIds.join(', ') || 'no judge'})`,
  );
  w(
    `  samples     ${s.samples.total} by method ${JSON.stringify(s.samples.byMethod)}, by reward ${JSON.stringify(s.samples.byReward)}, ${s.samples.masked} masked`,
  );
  w(`  dead letters ${s.deadLetters.total} ${JSON.stringify(s.deadLetters.byStage)}`);
  if (s.skippedPastEnd > 0) w(`  ${s.skippedPastEnd} records after --to were fetched and left out`);
  w(`  topics: ${Object.values(s.topics).join(', ')}`);
}

export function register(program: Command): void {
  program
    .command('replay')
    .description('re-derive pairs, judgements and samples from history with another configuration, into tagged topics')
    .requiredOption('--from <time|offset>', 'start of the range')
    .option('--to <time|offset>', 'end of the range (exclusive)')
    .option('--config <file>', 'replay configuration (JSON)')
    .requiredOption('--tag <name>', 'names the output topics and consumer groups')
    .option('--json', 'print the summary as one JSON object')
    .addHelpText('after', HELP)
    .action(async (flags: { from: string; to?: string; config?: string; tag: string; json?: boolean }) => {
      const config = loadConfig();
      let file: ReplayConfig = {};
      let from, to;
      try {
        from = parseBound(flags.from);
        to = flags.to ? parseBound(flags.to) : undefined;
        if (flags.config) file = loadReplayConfig(flags.config);
        if (!/^[A-Za-z0-9_-]+$/.test(flags.tag)) throw invalidInput(`--tag "${flags.tag}" must be letters, digits, - or _`, '--tag');
      } catch (err) {
        process.stderr.write(`turnstream replay: ${(err as Error).message}\n`);
        process.exitCode = 2;
        return;
      }
      const endpoints = endpointsOf(
        resolveStackOptions({ home: config.home, kafkaBrokers: config.kafkaBrokers, schemaRegistryUrl: config.schemaRegistryUrl }),
      );
      const kafka = createKafka({
        brokers: parseBrokers(endpoints.brokers),
        clientId: `turnstream-replay-${flags.tag}`,
        security: config.security.kafka,
      });
      const logger = createLogger('replay', config.logLevel);
      const abort = new AbortController();
      const onSignal = () => abort.abort();
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      const bars = new cliProgress.MultiBar(
        { stream: process.stderr, format: '{stage} |{bar}| {value}/{total} {state}', hideCursor: true, clearOnComplete: false },
        cliProgress.Presets.shades_classic,
      );
      const byStage = new Map<string, cliProgress.SingleBar>();
      const summary = await runReplay({
        kafka,
        registryUrl: endpoints.registryUrl,
        registrySecurity: config.security.registry,
        prefix: config.topicPrefix,
        tag: flags.tag,
        from,
        to,
        judge: replayJudge(config, file),
        judgeUntrainable: file.judge?.judgeUntrainable ?? true,
        assembler: {
          idleTimeoutMs: file.session?.idleTimeoutMs ?? config.session.idleTimeoutMs,
          endPolicy: file.session?.endPolicy ?? config.session.endPolicy,
          feedbackGraceMs: file.session?.feedbackGraceMs ?? config.session.feedbackGraceMs,
        },
        samples: await replaySamples(config, file),
        concurrency: file.concurrency,
        batchSize: file.batchSize,
        planFile: resolve(config.home, 'replays', `${config.topicPrefix}${flags.tag}.json`),
        signal: abort.signal,
        logger,
        onProgress: (p) => {
          for (const s of p.stages) {
            const payload = { stage: s.stage.padEnd(17), state: s.done ? 'done' : '' };
            let bar = byStage.get(s.stage);
            if (!bar) {
              bar = bars.create(Math.max(1, s.total), s.consumed, payload);
              byStage.set(s.stage, bar);
            }
            bar.setTotal(Math.max(1, s.total));
            bar.update(s.consumed, payload);
          }
        },
      }).finally(() => bars.stop());
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      if (flags.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
      else printSummary(summary);
      // kafkajs leaves sockets and timers behind for a while; the work is done and committed.
      process.exit(summary.interrupted ? 130 : 0);
    });
}

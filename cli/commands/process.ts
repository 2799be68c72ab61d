/**
 * `turnstream process <session-assembler|judge|sample-builder> [--instance id]`: one processor
 * service. Run several with distinct `--instance` ids to share the partitions.
 */
import type { Command } from 'commander';
import { endpointsOf, resolveStackOptions } from '../../infra/index.ts';
import { createJudge, DEFAULT_FEEDBACK_GRACE_MS, loadTeacher, startJudge, startSampleBuilder, startSessionAssembler, type EndPolicy } from '../../processors/index.ts';
import { createEventCodecs, createKafka, createLogger, ensureTopics, parseBrokers, type ProcessorHandle } from '../../streams/index.ts';
import { loadConfig, type TurnstreamConfig } from '../config.ts';

export const PROCESSORS = ['session-assembler', 'judge', 'sample-builder'] as const;
export type ProcessorName = (typeof PROCESSORS)[number];

const num = (v: string | undefined, d: number): number => (v === undefined || v === '' ? d : Number(v));

/**
 * Starts one processor from the configuration. Options beyond `TurnstreamConfig`'s fields come
 * from its raw env: `SESSION_END_POLICY` (masked|drop), `FEEDBACK_GRACE_MS` (how long, in stream
 * time, a ready pair waits for late 👍/👎; default 5000), `JUDGE_HINT_VOTES`, `JUDGE_TIMEOUT_MS`,
 * `TEACHER_BASE_URL` / `TEACHER_MODEL` / `TEACHER_API_KEY` (an engine that scores given tokens;
 * default: the upstream engine when one is configured, else the built-in base checkpoint),
 * `TEACHER_TOP_K`, `PROCESSOR_CONCURRENCY`, `PROCESSOR_SESSION_TIMEOUT_MS` (how soon a dead
 * instance's partitions move to the others; default 30000).
 */
export async function startProcessorFromConfig(name: ProcessorName, config: TurnstreamConfig, instanceId = '0'): Promise<ProcessorHandle> {
  const env = config.env;
  const endpoints = endpointsOf(resolveStackOptions({ home: config.home, kafkaBrokers: config.kafkaBrokers, schemaRegistryUrl: config.schemaRegistryUrl }));
  const kafka = createKafka({ brokers: parseBrokers(endpoints.brokers), clientId: `turnstream-${name}-${instanceId}` });
  const naming = { prefix: config.topicPrefix };
  await ensureTopics(kafka, { naming });
  const codecs = await createEventCodecs({ registryUrl: endpoints.registryUrl, naming });
  const logger = createLogger(name, config.logLevel);
  const common = {
    kafka,
    codecs,
    instanceId,
    logger,
    concurrency: env.PROCESSOR_CONCURRENCY ? Number(env.PROCESSOR_CONCURRENCY) : undefined,
    sessionTimeoutMs: env.PROCESSOR_SESSION_TIMEOUT_MS ? Number(env.PROCESSOR_SESSION_TIMEOUT_MS) : undefined,
  };
  if (name === 'session-assembler') {
    const endPolicy = (env.SESSION_END_POLICY ?? 'masked').toLowerCase();
    if (endPolicy !== 'masked' && endPolicy !== 'drop') throw new Error(`SESSION_END_POLICY must be masked or drop, got ${endPolicy}`);
    const feedbackGraceMs = num(env.FEEDBACK_GRACE_MS, DEFAULT_FEEDBACK_GRACE_MS);
    if (!(feedbackGraceMs >= 0)) throw new Error(`FEEDBACK_GRACE_MS must be a number of milliseconds >= 0, got ${env.FEEDBACK_GRACE_MS}`);
    return startSessionAssembler({ ...common, idleTimeoutMs: config.sessionIdleTimeoutMs, endPolicy: endPolicy as EndPolicy, feedbackGraceMs });
  }
  if (name === 'judge') {
    const judge = createJudge({
      baseUrl: config.judgeBaseUrl,
      model: config.judgeModel,
      apiKey: config.judgeApiKey,
      votes: config.judgeVotes,
      hintVotes: num(env.JUDGE_HINT_VOTES, 1),
      timeoutMs: num(env.JUDGE_TIMEOUT_MS, 60_000),
      mode: config.trainMethod,
    });
    logger.info({ judge: judge.id, mode: config.trainMethod }, 'judge selected');
    return startJudge({ ...common, judge });
  }
  const teacherUrl = env.TEACHER_BASE_URL || config.upstreamBaseUrl;
  const teacher =
    config.trainMethod === 'rl'
      ? undefined
      : await loadTeacher({
          weightsDir: config.weightsDir,
          logger,
          upstream: teacherUrl
            ? {
                baseUrl: teacherUrl,
                model: env.TEACHER_MODEL || config.upstreamModel || 'teacher',
                apiKey: env.TEACHER_API_KEY || (env.TEACHER_BASE_URL ? undefined : config.upstreamApiKey),
              }
            : undefined,
        });
  if (teacher) logger.info({ teacher: teacher.id }, 'teacher loaded');
  return startSampleBuilder({ ...common, method: config.trainMethod, teacher, topK: num(env.TEACHER_TOP_K, 0) });
}

export function register(program: Command): void {
  program
    .command('process')
    .description('run one stream processor: session-assembler, judge or sample-builder')
    .argument('<name>', PROCESSORS.join(' | '))
    .option('--instance <id>', 'instance id, unique among instances of this processor', '0')
    .action(async (name: string, flags: { instance: string }) => {
      if (!(PROCESSORS as readonly string[]).includes(name)) {
        process.stderr.write(`turnstream process: unknown processor "${name}"; expected one of ${PROCESSORS.join(', ')}\n`);
        process.exitCode = 2;
        return;
      }
      const config = loadConfig();
      const handle = await startProcessorFromConfig(name as ProcessorName, config, flags.instance);
      await handle.ready;
      process.stdout.write(`turnstream ${name} (instance ${flags.instance}) is running\n`);
      let stopping = false;
      const stop = () => {
        if (stopping) return;
        stopping = true;
        void handle.stop().then(() => process.exit(0), (err) => {
          process.stderr.write(`turnstream ${name}: stop failed: ${(err as Error).message}\n`);
          process.exit(1);
        });
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
      await handle.closed;
    });
}

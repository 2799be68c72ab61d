/**
 * `turnstream process <session-assembler|judge|sample-builder|trajectory-assembler|group-builder>
 * [--instance id]`: one processor service. Run several with distinct `--instance` ids to share the
 * partitions.
 */
import type { Command } from 'commander';
import { endpointsOf, resolveStackOptions } from '../../infra/index.ts';
import {
  createJudge,
  DEFAULT_FEEDBACK_GRACE_MS,
  loadTeacher,
  startJudge,
  startSampleBuilder,
  startGroupBuilder,
  startSessionAssembler,
  startTrajectoryAssembler,
} from '../../processors/index.ts';
import { createKafka, parseBrokers, waitForDependencies, type ProcessorHandle } from '../../streams/index.ts';
import { createLogger } from '../../core/index.ts';
import { servedModel } from '../served-model.ts';
import { loadConfig, type TurnstreamConfig } from '../config.ts';

export const PROCESSORS = ['session-assembler', 'judge', 'sample-builder', 'trajectory-assembler', 'group-builder'] as const;
export type ProcessorName = (typeof PROCESSORS)[number];

/**
 * Starts one processor from the configuration: `config.processor` for every processor,
 * `config.session` for the assembler, `config.judge` for the judge, `config.teacher` for the
 * sample builder (its teacher defaults to the upstream engine when one is configured, else the
 * built-in base checkpoint).
 */
export async function startProcessorFromConfig(name: ProcessorName, config: TurnstreamConfig, instanceId = '0'): Promise<ProcessorHandle> {
  const endpoints = endpointsOf(
    resolveStackOptions({ home: config.home, kafkaBrokers: config.kafkaBrokers, schemaRegistryUrl: config.schemaRegistryUrl }),
  );
  const kafka = createKafka({
    brokers: parseBrokers(endpoints.brokers),
    clientId: `turnstream-${name}-${instanceId}`,
    security: config.security.kafka,
  });
  const naming = { prefix: config.topicPrefix };
  const logger = createLogger(name, config.logLevel);
  const codecs = await waitForDependencies({
    kafka,
    brokers: endpoints.brokers,
    registryUrl: endpoints.registryUrl,
    registrySecurity: config.security.registry,
    naming,
    logger,
  });
  const common = {
    kafka,
    codecs,
    instanceId,
    logger,
    concurrency: config.processor.concurrency,
    sessionTimeoutMs: config.processor.sessionTimeoutMs,
  };
  if (name === 'session-assembler') {
    return startSessionAssembler({
      ...common,
      idleTimeoutMs: config.session.idleTimeoutMs,
      endPolicy: config.session.endPolicy,
      feedbackGraceMs: config.session.feedbackGraceMs ?? DEFAULT_FEEDBACK_GRACE_MS,
    });
  }
  if (name === 'trajectory-assembler') return startTrajectoryAssembler({ ...common, settleMs: config.grpo.settleMs });
  if (name === 'group-builder') {
    return startGroupBuilder({ ...common, normalizeStd: config.grpo.normalizeStd, batchTimeoutMs: config.grpo.batchTimeoutMs });
  }
  if (name === 'judge') {
    const judge = createJudge({ ...config.judge, mode: config.trainMethod });
    logger.info({ judge: judge.id, mode: config.trainMethod }, 'judge selected');
    return startJudge({ ...common, judge });
  }
  let teacher: Awaited<ReturnType<typeof loadTeacher>> | undefined;
  if (config.trainMethod !== 'rl') {
    const upstream = teacherUpstream(config);
    const served = upstream ? null : await servedModel(config, { logger });
    teacher = await loadTeacher({
      weightsDir: config.weightsDir,
      logger,
      upstream,
      ...(served?.kind === 'llama'
        ? { llama: { model: { name: served.name, path: served.path }, systemPrompt: served.systemPrompt } }
        : {}),
      ...(served?.kind === 'builtin' ? { modelId: served.modelId } : {}),
    });
  }
  if (teacher) logger.info({ teacher: teacher.id }, 'teacher loaded');
  return startSampleBuilder({ ...common, method: config.trainMethod, teacher, topK: config.teacher.topK });
}

/** The teacher engine: TEACHER_* when set, else the upstream engine (with its key), else none (the built-in base). */
export function teacherUpstream(config: TurnstreamConfig): { baseUrl: string; model: string; apiKey: string | undefined } | undefined {
  const baseUrl = config.teacher.baseUrl || config.upstream.baseUrl;
  if (!baseUrl) return undefined;
  return {
    baseUrl,
    model: config.teacher.model || config.upstream.model || 'teacher',
    apiKey: config.teacher.apiKey || (config.teacher.baseUrl ? undefined : config.upstream.apiKey),
  };
}

export function register(program: Command): void {
  program
    .command('process')
    .description(`run one stream processor: ${PROCESSORS.join(', ')}`)
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
        void handle.stop().then(
          () => process.exit(0),
          (err) => {
            process.stderr.write(`turnstream ${name}: stop failed: ${(err as Error).message}\n`);
            process.exit(1);
          },
        );
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
      await handle.closed;
    });
}

/**
 * The stream processors and the ClickHouse sink as the stack builds them: each one's options from
 * the settings (`PROCESSOR_*`, `SESSION_*`, `FEEDBACK_GRACE_MS`, `JUDGE_*`, `TRAIN_METHOD`,
 * `TEACHER_*`, `TRAJECTORY_SETTLE_MS`, `GRPO_*`, `SINK_*`, `CLICKHOUSE_*`), then the caller's
 * overrides. `turnstream process <name>` and `sink` (so `up`) override nothing but the instance.
 */
import type { Logger } from '../core/index.ts';
import type { AnalyticsOptions } from '../warehouse/index.ts';
import {
  createJudge,
  loadTeacher,
  startClickhouseSink,
  startGroupBuilder,
  startJudge,
  startSampleBuilder,
  startSessionAssembler,
  startTrajectoryAssembler,
  type ClickhouseSinkHandle,
  type ClickhouseSinkOptions,
  type CreateJudgeOptions,
  type GroupBuilderServiceOptions,
  type Judge,
  type SessionAssemblerServiceOptions,
  type Teacher,
  type TrainMethod,
  type TrajectoryAssemblerServiceOptions,
  type UpstreamTeacherOptions,
} from '../processors/index.ts';
import type { ProcessorHandle } from '../streams/index.ts';
import { stackEndpoints, type StackLink } from './endpoints.ts';
import type { ServedModel } from './served-model.ts';
import type { StackSettings } from './settings.ts';

export const PROCESSORS = ['session-assembler', 'judge', 'sample-builder', 'trajectory-assembler', 'group-builder'] as const;
export type ProcessorName = (typeof PROCESSORS)[number];

/** What a caller changes of the processors the settings describe. */
export interface ProcessorOverrides {
  /** The session assembler's timeout, end policy, grace. */
  session?: Partial<Pick<SessionAssemblerServiceOptions, 'idleTimeoutMs' | 'endPolicy' | 'feedbackGraceMs'>>;
  /** A judge instead of the configured one (`JUDGE_*`: the LLM judge, else the embedded one). */
  judge?: Judge;
  /** The training method of the judge and the sample builder. @default settings.trainMethod */
  method?: TrainMethod;
  /** The sample builder's teacher; null: none. @default loaded from the settings (none for `rl`) */
  teacher?: Teacher | null;
  /** Where the built-in model's base checkpoint is, for its teacher. @default settings.weightsDir (and the served model id) */
  teacherBase?: { weightsDir: string; modelId?: string };
  trajectory?: Partial<Pick<TrajectoryAssemblerServiceOptions, 'settleMs'>>;
  group?: Partial<Pick<GroupBuilderServiceOptions, 'normalizeStd' | 'batchTimeoutMs'>>;
  instanceId?: string;
  logger?: Logger;
}

/** The teacher engine: TEACHER_* when set, else the upstream engine (with its key), else none (the served model is). */
export function teacherUpstream(settings: StackSettings): UpstreamTeacherOptions | undefined {
  const baseUrl = settings.teacher.baseUrl || settings.upstream.baseUrl;
  if (!baseUrl) return undefined;
  return {
    baseUrl,
    model: settings.teacher.model || settings.upstream.model || 'teacher',
    apiKey: settings.teacher.apiKey || (settings.teacher.baseUrl ? undefined : settings.upstream.apiKey),
  };
}

/**
 * The sample builder's teacher: none for `rl`; else the teacher engine (`TEACHER_*`, the upstream
 * one), else the served model itself (a GGUF model on the hinted prompt, or the built-in base checkpoint).
 */
export async function loadSettingsTeacher(
  settings: StackSettings,
  method: TrainMethod,
  served: ServedModel | null,
  o: Pick<ProcessorOverrides, 'teacherBase' | 'logger'> = {},
): Promise<Teacher | undefined> {
  if (method === 'rl') return undefined;
  const upstream = teacherUpstream(settings);
  return loadTeacher({
    weightsDir: o.teacherBase?.weightsDir ?? settings.weightsDir,
    logger: o.logger,
    upstream,
    ...(!upstream && served?.kind === 'llama'
      ? { llama: { model: { name: served.name, path: served.path }, systemPrompt: served.systemPrompt } }
      : {}),
    ...(!upstream && served?.kind === 'builtin' ? { modelId: o.teacherBase?.modelId ?? served.modelId } : {}),
  });
}

/** Each processor's options from the settings and the overrides (the sample builder's without its teacher; the judge's as createJudge takes them). */
export function processorOptions(settings: StackSettings, link: Pick<StackLink, 'kafka' | 'codecs'>, overrides: ProcessorOverrides = {}) {
  const common = {
    kafka: link.kafka,
    codecs: link.codecs,
    instanceId: overrides.instanceId,
    logger: overrides.logger,
    concurrency: settings.processor.concurrency,
    sessionTimeoutMs: settings.processor.sessionTimeoutMs,
  };
  const method = overrides.method ?? settings.trainMethod;
  return {
    common,
    method,
    sessionAssembler: {
      ...common,
      idleTimeoutMs: settings.session.idleTimeoutMs,
      endPolicy: settings.session.endPolicy,
      feedbackGraceMs: settings.session.feedbackGraceMs,
      ...overrides.session,
    } satisfies SessionAssemblerServiceOptions,
    trajectoryAssembler: {
      ...common,
      settleMs: settings.grpo.settleMs,
      ...overrides.trajectory,
    } satisfies TrajectoryAssemblerServiceOptions,
    groupBuilder: {
      ...common,
      normalizeStd: settings.grpo.normalizeStd,
      batchTimeoutMs: settings.grpo.batchTimeoutMs,
      ...overrides.group,
    } satisfies GroupBuilderServiceOptions,
    judge: { ...settings.judge, mode: method } satisfies CreateJudgeOptions,
    sampleBuilder: { ...common, method, topK: settings.teacher.topK },
  };
}

/** Starts processor `name` on `link` (the sample builder's teacher loaded first unless given). */
export async function processorService(
  settings: StackSettings,
  name: ProcessorName,
  link: Pick<StackLink, 'kafka' | 'codecs'>,
  served: ServedModel | null,
  overrides: ProcessorOverrides = {},
): Promise<ProcessorHandle> {
  const o = processorOptions(settings, link, overrides);
  switch (name) {
    case 'session-assembler':
      return startSessionAssembler(o.sessionAssembler);
    case 'trajectory-assembler':
      return startTrajectoryAssembler(o.trajectoryAssembler);
    case 'group-builder':
      return startGroupBuilder(o.groupBuilder);
    case 'judge': {
      const judge = overrides.judge ?? createJudge(o.judge);
      overrides.logger?.info({ judge: judge.id, mode: o.method }, 'judge selected');
      return startJudge({ ...o.common, judge });
    }
    case 'sample-builder': {
      const teacher =
        overrides.teacher === null ? undefined : (overrides.teacher ?? (await loadSettingsTeacher(settings, o.method, served, overrides)));
      if (teacher) overrides.logger?.info({ teacher: teacher.id }, 'teacher loaded');
      return startSampleBuilder({ ...o.sampleBuilder, teacher });
    }
  }
}

/** Starts `names` in order on `link`; on a failure the ones started are stopped again. */
export async function processorServices(
  settings: StackSettings,
  names: readonly ProcessorName[],
  link: Pick<StackLink, 'kafka' | 'codecs'>,
  served: ServedModel | null,
  overrides: ProcessorOverrides = {},
): Promise<ProcessorHandle[]> {
  const started: ProcessorHandle[] = [];
  try {
    for (const name of names) started.push(await processorService(settings, name, link, served, overrides));
  } catch (err) {
    for (const s of started.reverse()) await s.stop().catch(() => undefined);
    throw err;
  }
  return started;
}

/** Where analytics lives (sink, report, dashboard): `CLICKHOUSE_URL` (else the local stack's) and `CLICKHOUSE_*`. */
export function analyticsOptions(settings: StackSettings): AnalyticsOptions {
  return {
    url: stackEndpoints(settings).clickhouseUrl,
    database: settings.clickhouse.database,
    username: settings.clickhouse.username,
    password: settings.clickhouse.password,
    tls: settings.clickhouse.tls,
    tablePrefix: settings.clickhouse.tablePrefix,
  };
}

/** What a caller changes of the sink the settings describe. */
export type SinkOverrides = Partial<Omit<ClickhouseSinkOptions, 'kafka' | 'codecs'>>;

/** The sink's options: the settings' (`SINK_*`, `CLICKHOUSE_*`), then the overrides. */
export function sinkOptions(
  settings: StackSettings,
  link: Pick<StackLink, 'kafka' | 'codecs'>,
  overrides: SinkOverrides = {},
): ClickhouseSinkOptions {
  const s = settings.sink;
  return {
    kafka: link.kafka,
    codecs: link.codecs,
    analytics: analyticsOptions(settings),
    groupId: s.groupId,
    batchRows: s.batchRows,
    maxBufferedRows: s.maxBufferedRows,
    flushIntervalMs: s.flushMs,
    replayTags: s.replayTags,
    replayDiscoveryMs: s.replayDiscoveryMs,
    // The sink is a consumer group like the processors: a dead instance's partitions move as soon.
    sessionTimeoutMs: settings.processor.sessionTimeoutMs,
    ...overrides,
  };
}

/** The ClickHouse sink, started (its `ready` resolves once the tables are migrated and it reads). */
export function sinkService(
  settings: StackSettings,
  link: Pick<StackLink, 'kafka' | 'codecs'>,
  overrides: SinkOverrides = {},
): ClickhouseSinkHandle {
  return startClickhouseSink(sinkOptions(settings, link, overrides));
}

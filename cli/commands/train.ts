/**
 * `turnstream train`: the learner service (trainer/learner.ts). Consumes samples, trains one step
 * per batch, publishes each version with the consumed offsets in one Kafka transaction.
 * Settings come from `config.train` (TRAIN_*, TRAINER_METRICS_PORT); the flags override them; the
 * learner is built by stack/ (the same learner eval and gym train, but for what they name).
 */
import { createServer, type Server } from 'node:http';
import type { Command } from 'commander';
import { ensureTopics } from '../../streams/index.ts';
import { createLogger, metricsRegistry, KeySet, presentedKey } from '../../core/index.ts';
import { selectBackend, type BackendName } from '../../policy/index.ts';
import { LEARNER_LR, LORA_LR, type LearnerHandle } from '../../trainer/index.ts';
import { connectService, learnerService, type LearnerOverrides } from '../../stack/index.ts';
import { servedModel } from '../served-model.ts';
import { dashboardKeys } from './dashboard.ts';
import { loadConfig, RULES, SettingsReader, type TrainConfig, type TurnstreamConfig } from '../config.ts';

interface TrainFlags {
  samplesTag?: string;
  fromVersion?: string;
  backend?: string;
  modelId?: string;
  batchSize?: string;
  maxStaleness?: string;
  maxUserShare?: string;
  lr?: string;
  /** false with --no-consensus. */
  consensus: boolean;
  weightsTransport?: string;
  instance: string;
  model?: string;
}

/**
 * The learner's settings: `--batch-size`, `--max-staleness`, `--max-user-share`, `--lr` and
 * `--no-consensus` over `config.train`; `--model-id` over TURNSTREAM_MODEL_ID, `--weights-transport`
 * over TURNSTREAM_WEIGHTS_TRANSPORT. Bad flag values
 * throw one TS_ERR_INVALID_INPUT naming each flag, as bad variables do.
 */
export function trainSettings(
  config: TurnstreamConfig,
  f: Omit<TrainFlags, 'instance' | 'backend' | 'samplesTag'>,
): TrainConfig & { modelId: string | undefined; fromVersion: number | undefined; weightsTransport: 'file' | 'kafka' } {
  const t = config.train;
  const r = new SettingsReader({
    '--batch-size': f.batchSize,
    '--max-staleness': f.maxStaleness,
    '--max-user-share': f.maxUserShare,
    '--lr': f.lr,
    '--from-version': f.fromVersion,
    '--weights-transport': f.weightsTransport,
  });
  return r.done(
    {
      ...t,
      batchSize: r.number('--batch-size', t.batchSize, RULES.trainBatchSize),
      maxStaleness: r.number('--max-staleness', t.maxStaleness, RULES.trainMaxStaleness),
      maxUserShare: r.number('--max-user-share', t.maxUserShare, RULES.trainMaxUserShare),
      lr: r.optionalNumber('--lr', RULES.trainLr) ?? t.lr,
      consensus: f.consensus && t.consensus,
      modelId: f.modelId ?? config.modelId,
      fromVersion: r.optionalNumber('--from-version', RULES.version),
      weightsTransport: r.oneOf('--weights-transport', config.weightsTransport, ['file', 'kafka']),
    },
    'invalid flags',
  );
}

/**
 * What `turnstream train` gives stack/'s learner: the configuration with the flags' learner
 * settings, and what is wiring, not learning (the model id, the version to start from, the weight
 * transport), as overrides.
 */
export function trainLearner(
  config: TurnstreamConfig,
  s: ReturnType<typeof trainSettings>,
): { settings: TurnstreamConfig; overrides: LearnerOverrides } {
  const { modelId, fromVersion, weightsTransport, ...train } = s;
  return { settings: { ...config, train }, overrides: { modelId, fromVersion, weightsTransport } };
}

export function register(program: Command): void {
  program
    .command('train')
    .description('run the learner: samples → PPO/OPD steps → weight versions (exactly once with the consumed offsets)')
    .option('--samples-tag <name>', 'train from a replay-tagged samples topic')
    .option('--from-version <n>', 'train on top of this version instead of the last published one')
    .option('--backend <name>', 'force a tfjs backend (tensorflow-gpu, tensorflow, wasm, cpu); default: the fastest available')
    .option('--model-id <id>', 'model id (TURNSTREAM_MODEL_ID, default turnstream-tiny)')
    .option('--batch-size <n>', 'samples per step (TRAIN_BATCH_SIZE, default 16)')
    .option('--max-staleness <n>', 'drop samples more than n versions old (TRAIN_MAX_STALENESS, default 2)')
    .option('--max-user-share <x>', "cap of one user's share of a batch (TRAIN_MAX_USER_SHARE, default 0.5)")
    .option('--lr <x>', `learning rate (TRAIN_LR; default the model family's: ${LORA_LR} LoRA, ${LEARNER_LR} built-in)`)
    .option('--no-consensus', "don't weight users' feedback by their agreement with the others (TRAIN_CONSENSUS=0)")
    .option(
      '--weights-transport <file|kafka>',
      'how gateways get the versions: the shared weight store, or Kafka (TURNSTREAM_WEIGHTS_TRANSPORT, default file)',
    )
    .option('--instance <id>', "instance id (logs and client id; the transactional id is the group's)", '0')
    .option('--model <spec>', 'the model to train: builtin, a catalog name, a .gguf path or hf:ORG/REPO/FILE.gguf (TURNSTREAM_MODEL)')
    .action(runTrain);
}

/** The learner service until it stops: Kafka and the registry waited for, the learner started (stack/), its `/metrics` served. */
async function runTrain(f: TrainFlags): Promise<void> {
  const config = loadConfig();
  const s = trainSettings(config, f);
  const logger = createLogger('trainer', config.logLevel);
  const backend = await selectBackend(f.backend as BackendName | undefined, { logger });
  logger.info({ backend, forced: f.backend ?? null }, 'trainer backend');
  const link = await connectService(config, `turnstream-trainer-${f.instance}`, logger);
  if (f.samplesTag) await ensureTopics(link.kafka, { naming: { ...link.naming, tag: f.samplesTag } });
  const served = await servedModel(config, { spec: f.model, logger });
  const t = trainLearner(config, s);
  const { handle } = await learnerService(t.settings, served, link, {
    ...t.overrides,
    samplesTag: f.samplesTag,
    instanceId: f.instance,
    logger,
  });
  const server = startMetricsServer(config, s.metricsPort);
  process.stdout.write(
    `turnstream train is running (model ${handle.stats().version >= 0 ? `v${handle.stats().version}` : ''}, backend ${backend})\n`,
  );
  stopOnSignals(handle, server);
  await handle.closed;
  server?.close();
}

/** The learner's Prometheus `/metrics` on `port` (none when 0), behind the metrics key when set, else (keys on) any API key: as the gateway's. */
function startMetricsServer(config: TurnstreamConfig, port: number): Server | null {
  const keys = new KeySet(
    (config.metricsKey ? [config.metricsKey] : dashboardKeys({ ...config, dashboardKey: undefined })).map((k) => [k, true] as const),
  );
  return port
    ? createServer((req, res) => {
        if (req.url !== '/metrics') return void res.writeHead(404).end();
        if (keys.size > 0 && !keys.match(presentedKey(req.headers))) return void res.writeHead(401, { 'www-authenticate': 'Bearer' }).end();
        void metricsRegistry.metrics().then((text) => res.writeHead(200, { 'content-type': metricsRegistry.contentType }).end(text));
      }).listen(port, config.host)
    : null;
}

/** SIGINT and SIGTERM stop the learner, then end the process (exit 1 when stopping failed). */
function stopOnSignals(handle: LearnerHandle, server: Server | null): void {
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    server?.close();
    void handle.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`turnstream train: stop failed: ${(err as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

/**
 * `turnstream train`: the learner service (trainer/learner.ts). Consumes samples, trains one step
 * per batch, publishes each version with the consumed offsets in one Kafka transaction.
 * Options beyond the flags come from the environment: TRAIN_BATCH_SIZE, TRAIN_MAX_STALENESS,
 * TRAIN_STALENESS (drop|tis), TRAIN_MAX_USER_SHARE, TRAIN_MAX_WAIT_MS, TRAIN_LR, TRAIN_KL_COEF,
 * TRAIN_ENTROPY_COEF, TRAINER_METRICS_PORT (Prometheus /metrics; unset = off).
 */
import { createServer } from 'node:http';
import type { Command } from 'commander';
import { endpointsOf, resolveStackOptions } from '../../infra/index.ts';
import { createEventCodecs, createKafka, createLogger, ensureTopics, metricsRegistry, parseBrokers } from '../../streams/index.ts';
import { LEARNER_LR, selectBackend, startLearner, type BackendName, type StalenessMode } from '../../trainer/index.ts';
import { loadConfig } from '../config.ts';

const num = (v: string | undefined, d: number): number => (v === undefined || v === '' ? d : Number(v));

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
  instance: string;
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
    .option('--lr <x>', `learning rate (TRAIN_LR, default ${LEARNER_LR})`)
    .option('--no-consensus', "don't weight users' feedback by their agreement with the others (TRAIN_CONSENSUS=0)")
    .option('--instance <id>', 'instance id (part of the transactional id)', '0')
    .action(async (f: TrainFlags) => {
      const config = loadConfig();
      const env = config.env;
      const logger = createLogger('trainer', config.logLevel);
      const backend = await selectBackend(f.backend as BackendName | undefined, { logger });
      logger.info({ backend, forced: f.backend ?? null }, 'trainer backend');
      const endpoints = endpointsOf(
        resolveStackOptions({ home: config.home, kafkaBrokers: config.kafkaBrokers, schemaRegistryUrl: config.schemaRegistryUrl }),
      );
      const kafka = createKafka({ brokers: parseBrokers(endpoints.brokers), clientId: `turnstream-trainer-${f.instance}` });
      const naming = { prefix: config.topicPrefix };
      await ensureTopics(kafka, { naming });
      if (f.samplesTag) await ensureTopics(kafka, { naming: { ...naming, tag: f.samplesTag } });
      const codecs = await createEventCodecs({ registryUrl: endpoints.registryUrl, naming });
      const staleness = (env.TRAIN_STALENESS ?? 'drop') as StalenessMode;
      if (staleness !== 'drop' && staleness !== 'tis') throw new Error(`TRAIN_STALENESS must be drop or tis, got ${staleness}`);
      const handle = await startLearner({
        kafka,
        codecs,
        weightsDir: config.weightsDir,
        modelId: f.modelId ?? (env.TURNSTREAM_MODEL_ID || undefined),
        samplesTag: f.samplesTag,
        fromVersion: f.fromVersion !== undefined ? Number(f.fromVersion) : undefined,
        instanceId: f.instance,
        batch: {
          batchSize: num(f.batchSize ?? env.TRAIN_BATCH_SIZE, 16),
          maxStaleness: num(f.maxStaleness ?? env.TRAIN_MAX_STALENESS, 2),
          staleness,
          maxUserShare: num(f.maxUserShare ?? env.TRAIN_MAX_USER_SHARE, 0.5),
          maxWaitMs: num(env.TRAIN_MAX_WAIT_MS, 30_000),
        },
        optimizer: { lr: num(f.lr ?? env.TRAIN_LR, LEARNER_LR) },
        consensus: f.consensus && !['0', 'false', 'no', 'off'].includes((env.TRAIN_CONSENSUS ?? '').toLowerCase()),
        step: { klCoef: num(env.TRAIN_KL_COEF, 0), entropyCoef: num(env.TRAIN_ENTROPY_COEF, 0) },
        logger,
      });
      await handle.ready;
      const port = env.TRAINER_METRICS_PORT ? Number(env.TRAINER_METRICS_PORT) : 0;
      const server = port
        ? createServer((req, res) => {
            if (req.url !== '/metrics') return void res.writeHead(404).end();
            void metricsRegistry.metrics().then((text) => res.writeHead(200, { 'content-type': metricsRegistry.contentType }).end(text));
          }).listen(port, config.host)
        : null;
      process.stdout.write(
        `turnstream train is running (model ${handle.stats().version >= 0 ? `v${handle.stats().version}` : ''}, backend ${backend})\n`,
      );
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
      await handle.closed;
      server?.close();
    });
}

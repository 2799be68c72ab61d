/**
 * The learner service: consumes `turnstream.samples.v1` (read_committed), trains one step per
 * batch and publishes each new checkpoint as a WeightVersion IN THE SAME Kafka transaction as the
 * consumed samples' offsets (the "publish, then commit" consumer, streams/publish-consumer.ts).
 *
 * Exactly-once, across crashes:
 * - the checkpoint file is written before the transaction; a crash in between leaves an
 *   unpublished folder, which the next start deletes (its version number is reused);
 * - with the Kafka weight transport (`weightsTransport: 'kafka'`) the checkpoint's files go in
 *   pieces on the weight-blobs topic in the same transaction, before the WeightVersion that names
 *   them: a gateway on another host sees both or neither, and a crash before the commit leaves
 *   nothing readable (the reused number's pieces replace the aborted ones' keys);
 * - on start the learner reads the weights topic to its end and resumes from the last published
 *   version of its model (or `fromVersion`), fetched into its store first if it was published
 *   through Kafka from another home, and its consumer group resumes from the committed
 *   offsets, so a committed batch is never trained again;
 * - the per-user cap can leave a sample buffered while later ones of its partition are trained.
 *   The committed offset stops at the oldest buffered sample, and the offsets above it that are
 *   already trained travel as the commit's metadata; on restart they are skipped.
 *
 * There is one learner per model (and samples tag): its transactional id is its group's, so a
 * second learner of the model, whatever its instance id, fences the first.
 */
import { rm } from 'node:fs/promises';
import type { Kafka } from 'kafkajs';
import type { DeadLetter, Sample, WeightVersion } from '../schemas/index.ts';
import { createLogger, type Logger, counter, gauge, histogram } from '../core/index.ts';
import { deadLetter, ensureTopics, type EventCodecs, readToEnd, PublishConsumer, type TransactionOutput } from '../streams/index.ts';
import { WeightTransport, type WeightsTransportKind } from '../policy/index.ts';
import type { AdamWOptions } from './adamw.ts';
import { SampleBatcher, type BatcherOptions } from './batcher.ts';
import { ratedTurnOf, weighByConsensus } from './consensus-weighting.ts';
import type { LearnerStepOptions, StepMetrics, StepSample } from './learner-step.ts';
import { PolicyStepper, trainMetricsOf } from './policy-stepper.ts';
import { UserConsensus, type UserConsensusOptions } from './user-consensus.ts';
import { BuiltinLineage, type PolicyLineage } from './policy-lineage.ts';

export { LEARNER_LR, LORA_LR, LORA_MIN_SAMPLES, LORA_MAX_KL } from './defaults.ts';

export interface LearnerOptions {
  kafka: Kafka;
  /** Codecs of the live topic family (the weights topic is always the live one). */
  codecs: EventCodecs;
  /** Weight store root. `TURNSTREAM_WEIGHTS_DIR` */
  weightsDir: string;
  /**
   * How gateways get the versions: `file`, the WeightVersion names the version's folder (gateways
   * share this weight store); `kafka`, its files also go in pieces on `turnstream.weight-blobs.v1`
   * in the version's transaction, for gateways with a home of their own (policy/weight-transport.ts).
   * `TURNSTREAM_WEIGHTS_TRANSPORT` @default 'file'
   */
  weightsTransport?: WeightsTransportKind;
  /** @default 'turnstream-tiny' (or the lineage's) */
  modelId?: string;
  /**
   * The model being trained and its versions. @default the built-in model's checkpoints
   * (`BuiltinLineage(weightsDir, modelId)`); a `LoraLineage` trains a LoRA adapter on a GGUF base.
   */
  lineage?: PolicyLineage;
  /** Train from a replay's samples (`topicName('samples', { tag })`). @default the live samples */
  samplesTag?: string;
  /** Train on top of this version instead of the last published one. @default the last published (or 0) */
  fromVersion?: number;
  /** @default `<prefix>turnstream.learner.<modelId>` (+ `.<tag>`) */
  groupId?: string;
  /** Names this learner in logs (the transactional id is the group's). @default '0' */
  instanceId?: string;
  /** Batch size, staleness and per-user cap. */
  batch?: BatcherOptions;
  /** Loss weights, regularizers, importance weights and the KL guard. */
  step?: Omit<LearnerStepOptions, 'reference' | 'lr'>;
  /**
   * What a GRPO rollout batch's step changes of `step` (docs/design/algorithms.md §9): the
   * advantages are already relative to the group, so no per-user baseline, damping or consensus
   * weight; the loss is DAPO's per-token mean; KL to the base 0, as the reference.
   * @default {@link GRPO_STEP}
   */
  grpoStep?: Partial<Omit<LearnerStepOptions, 'reference' | 'lr'>>;
  /**
   * Weight each sample's loss by its user's agreement with the other users (docs/design/algorithms.md §7,
   * trainer/consensus-weighting.ts). `turnstream train --no-consensus`, `TRAIN_CONSENSUS=0` @default true
   */
  consensus?: boolean;
  /** Priors and thresholds of the consensus. */
  consensusOptions?: UserConsensusOptions;
  /** AdamW settings. @default { lr: LEARNER_LR, betas 0.9/0.98, weightDecay 0.1, maxGradNorm 1 } */
  optimizer?: Partial<AdamWOptions>;
  /** Buffered samples before the consumer pauses. @default 4 × batch size */
  maxBuffered?: number;
  /** Called after each published version (tests, the eval). */
  onVersion?: (wv: WeightVersion) => void;
  logger?: Logger;
}

export interface LearnerStats {
  /** Version of the weights in memory (the last published one). */
  version: number;
  steps: number;
  consumed: number;
  trained: number;
  droppedStale: number;
  deadLettered: number;
  /** Samples of another model (their `policyModelId`), skipped. */
  otherModel: number;
  /** Samples folded back into the user consensus on start (those the group had committed). */
  consensusRestored: number;
  buffered: number;
  transactions: number;
  /** Batches taken (each a step published, a step undone by the KL guard, or nothing to train). */
  batches: number;
  /** Steps undone by the KL guard: their batch was consumed, no version was published. */
  rejected: number;
}

export interface LearnerHandle {
  /** Resolves once resumed (weights loaded, consumer running). */
  ready: Promise<void>;
  stats(): LearnerStats;
  /** Each user's current consensus weight (empty with consensus off). */
  userWeights(): Record<string, number>;
  /** Finishes the batch in progress (publishing it), then stops. */
  stop(): Promise<void>;
  /** Resolves when stopped, rejects on a fatal error (a failed transaction, fencing). */
  closed: Promise<void>;
}

const metrics = {
  consumed: counter('turnstream_trainer_samples_in_total', 'Samples consumed', ['model']),
  trained: counter('turnstream_trainer_samples_trained_total', 'Samples trained on', ['model', 'method']),
  dropped: counter('turnstream_trainer_samples_dropped_stale_total', 'Samples dropped as too stale', ['model']),
  steps: counter('turnstream_trainer_steps_total', 'Optimizer steps (= published versions)', ['model']),
  version: gauge('turnstream_trainer_version', 'Last published weight version', ['model']),
  loss: gauge('turnstream_trainer_loss', 'Loss of the last step', ['model']),
  reward: gauge('turnstream_trainer_mean_reward', 'Mean reward of the last batch', ['model']),
  drift: gauge('turnstream_trainer_logprob_drift', 'Mean |rollout − recomputed| log-prob of the last batch', ['model']),
  kl: gauge('turnstream_trainer_kl', 'KL(π_old ‖ π_new) of the last step', ['model']),
  clip: gauge('turnstream_trainer_clip_fraction', 'Clip fraction of the last step', ['model']),
  userWeight: gauge('turnstream_trainer_user_weight', "A user's consensus weight (what they reward vs the others)", ['model', 'user']),
  conflicts: gauge('turnstream_trainer_user_conflicts', 'Pairs of users who push the model in opposite directions', ['model']),
  buffered: gauge('turnstream_trainer_buffered_samples', 'Samples waiting for a batch', ['model']),
  rejected: counter('turnstream_trainer_steps_rejected_total', 'Steps undone by the KL guard (no version published)', ['model']),
  tis: gauge('turnstream_trainer_tis_mean', 'Mean truncated importance weight of the last step (1: none applied)', ['model']),
  mismatchKl: gauge('turnstream_trainer_mismatch_kl', 'k3 KL(π_rollout ‖ π_trainer) of the last step (engine/trainer mismatch)', ['model']),
  tisTruncated: gauge('turnstream_trainer_tis_truncated', 'Share of tokens whose importance weight hit the cap in the last step', [
    'model',
  ]),
  stepSeconds: histogram('turnstream_trainer_step_seconds', 'Training step time', ['model'], [0.1, 0.5, 1, 2, 5, 10, 30, 60]),
};

interface Origin {
  partition: number;
  offset: bigint;
}

/** The last WeightVersion of `modelId` on the weights topic (the highest version), or null. */
export async function lastPublishedVersion(kafka: Kafka, codecs: EventCodecs, modelId: string): Promise<WeightVersion | null> {
  let best: WeightVersion | null = null;
  const codec = codecs.of('weights');
  await readToEnd(kafka, codec.topic, async (r) => {
    if (!r.value) return;
    const wv = await codec.decode(r.value);
    if (wv.modelId === modelId && (!best || wv.version > best.version)) best = wv;
  });
  return best;
}

export async function startLearner(options: LearnerOptions): Promise<LearnerHandle> {
  const l = new Learner(options);
  await l.start();
  return l.handle();
}

class Learner {
  private readonly o: LearnerOptions;
  private readonly log: Logger;
  private readonly modelId: string;
  private readonly lineage: PolicyLineage;
  private readonly batcher: SampleBatcher<Origin>;
  private stepper: PolicyStepper | null = null;
  private readonly consensus: UserConsensus | null;
  private readonly groupId: string;
  private readonly pendingDlq: Array<{ key: string; value: DeadLetter }> = [];
  private readonly transport: WeightTransport;
  /** The samples read and the versions published with their offsets ("publish, then commit"). */
  private kafka!: PublishConsumer;
  /** Aborts a commit still retrying when the learner stops. */
  private readonly stopCommits = new AbortController();
  private samplesTopic = '';
  private version = 0;
  private nextVersion = 1;
  private steps = 0;
  private baseModel = '';
  private stopping = false;
  private loop: Promise<void> = Promise.resolve();
  private readonly counts = {
    consumed: 0,
    trained: 0,
    droppedStale: 0,
    deadLettered: 0,
    otherModel: 0,
    transactions: 0,
    consensusRestored: 0,
    batches: 0,
    rejected: 0,
  };
  private readyResolve!: () => void;
  private readonly ready = new Promise<void>((r) => (this.readyResolve = r));
  private closedResolve!: () => void;
  private closedReject!: (e: unknown) => void;
  private readonly closed = new Promise<void>((res, rej) => {
    this.closedResolve = res;
    this.closedReject = rej;
  });

  constructor(options: LearnerOptions) {
    this.o = options;
    this.modelId = options.lineage?.modelId ?? options.modelId ?? 'turnstream-tiny';
    this.log = options.logger ?? createLogger('learner');
    this.lineage = options.lineage ?? new BuiltinLineage(options.weightsDir, this.modelId);
    this.batcher = new SampleBatcher<Origin>(options.batch);
    this.consensus = options.consensus === false ? null : new UserConsensus(options.consensusOptions);
    const prefix = options.codecs.naming.prefix ?? '';
    this.groupId = options.groupId ?? `${prefix}turnstream.learner.${this.modelId}${options.samplesTag ? `.${options.samplesTag}` : ''}`;
    this.closed.catch(() => undefined);
    this.transport = new WeightTransport({
      weightsDir: options.weightsDir,
      connection: () => Promise.resolve({ kafka: options.kafka, codecs: options.codecs }),
      logger: this.log,
    });
  }

  handle(): LearnerHandle {
    return {
      ready: this.ready,
      closed: this.closed,
      stats: () => ({ version: this.version, steps: this.steps, buffered: this.batcher.size, ...this.counts }),
      userWeights: () => Object.fromEntries((this.consensus?.stats() ?? []).map((u) => [u.userId, u.weight])),
      stop: () => this.stop(),
    };
  }

  async start(): Promise<void> {
    const { kafka, codecs } = this.o;
    const samplesCodecs = this.o.samplesTag ? await codecs.withNaming({ ...codecs.naming, tag: this.o.samplesTag }) : codecs;
    const samplesCodec = samplesCodecs.of('samples');
    this.samplesTopic = samplesCodec.topic;

    if (this.o.weightsTransport === 'kafka') await ensureTopics(kafka, { naming: codecs.naming, ids: ['weightBlobs'] });
    // Resume: the last published version, minus whatever a crash left unpublished.
    const published = await lastPublishedVersion(kafka, codecs, this.modelId);
    const v0 = await this.lineage.init();
    // A home that never held it (the trainer moved to another host): fetched, if it travelled through Kafka.
    if (published && (await this.transport.localize(published, this.lineage.path(published.version))) === 'fetched') {
      this.log.info({ version: published.version, uri: published.uri }, 'fetched the last published version into this weight store');
    }
    const publishedVersion = published?.version ?? 0;
    for (const v of await this.lineage.versions()) {
      if (v > publishedVersion) {
        this.log.warn({ version: v }, 'discarding an unpublished version (left by a crash)');
        await rm(this.lineage.path(v), { recursive: true, force: true });
      }
    }
    const from = this.o.fromVersion ?? publishedVersion;
    if (from > publishedVersion) throw new Error(`--from-version ${from} is newer than the last published version ${publishedVersion}`);
    const loaded = await this.lineage.load(
      from,
      published && published.version === from ? published.sha256 : from === 0 ? v0.sha256 : undefined,
    );
    this.stepper = new PolicyStepper(loaded.policy, { optimizer: this.o.optimizer, step: this.o.step, grpoStep: this.o.grpoStep });
    this.version = from;
    this.nextVersion = publishedVersion + 1;
    // Learner steps since version 0 (a base's own metrics count pretraining steps, not ours).
    this.steps = from === 0 ? 0 : published && from === publishedVersion ? published.metrics.steps : (loaded.steps ?? 0);
    this.baseModel = published?.baseModel ?? this.lineage.baseModel;
    metrics.version.set({ model: this.modelId }, this.version);
    this.log.info(
      {
        modelId: this.modelId,
        version: from,
        nextVersion: this.nextVersion,
        steps: this.steps,
        samplesTopic: this.samplesTopic,
        groupId: this.groupId,
      },
      'learner resumed',
    );

    if (this.consensus) await this.restoreConsensus(samplesCodec);

    const maxBuffered = this.o.maxBuffered ?? 4 * this.batcher.batchSize;
    this.kafka = new PublishConsumer({
      kafka,
      groupId: this.groupId,
      instanceId: this.o.instanceId,
      topic: this.samplesTopic,
      logger: this.log,
      handle: async (partition, m, offset) => {
        this.counts.consumed++;
        metrics.consumed.inc({ model: this.modelId });
        try {
          if (!m.value) throw new Error('record has no value (tombstone)');
          const sample = await samplesCodec.decode(m.value);
          if (sample.policyModelId !== this.modelId) {
            // Another model's turns (an upstream engine, another built-in model): not ours to train.
            this.kafka.done(partition, offset);
            this.counts.otherModel++;
            return;
          }
          this.batcher.add(sample, { partition, offset });
        } catch (err) {
          this.pendingDlq.push({
            key: m.key?.toString('utf8') ?? '',
            value: deadLetter({ topic: this.samplesTopic, partition, offset: m.offset, key: m.key, value: m.value }, err, 'learner', 1),
          });
          this.kafka.done(partition, offset);
          this.counts.deadLettered++;
        }
      },
      afterBatch: () => {
        metrics.buffered.set({ model: this.modelId }, this.batcher.size);
        // A GRPO batch larger than the buffer (a batch of multi-turn rollouts) is read whole first.
        if (this.batcher.size >= maxBuffered && this.batcher.missingOfHeadGroup() === 0) this.kafka.pause();
      },
      onAssigned: (partitions) => {
        const mine = new Set(partitions);
        this.batcher.remove((x) => !mine.has(x.meta.partition));
      },
      pending: () => this.batcher.pending().map((p) => p.meta),
      onCrash: (err) => void this.fail(err),
    });
    await this.kafka.start();
    this.loop = this.trainLoop().catch((err) => this.fail(err));
    this.readyResolve();
  }

  private async trainLoop(): Promise<void> {
    while (!this.stopping) {
      if (this.batcher.ready(this.version)) await this.runBatch();
      else if (this.pendingDlq.length > 0) await this.commit(null);
      else await new Promise((r) => setTimeout(r, 100));
    }
  }

  private async runBatch(): Promise<void> {
    const { batch, dropped } = this.batcher.take(this.version);
    if (this.batcher.size < (this.o.maxBuffered ?? 4 * this.batcher.batchSize) / 2) this.kafka.resume();
    this.counts.droppedStale += dropped.length;
    if (dropped.length > 0) {
      metrics.dropped.inc({ model: this.modelId }, dropped.length);
      this.log.info({ dropped: dropped.length, version: this.version, maxStaleness: this.batcher.maxStaleness }, 'dropped stale samples');
    }
    let published: WeightVersion | null = null;
    let blobs: TransactionOutput[] = [];
    let m: StepMetrics | null = null;
    const stepStarted = Date.now();
    if (batch.length > 0) {
      const end = metrics.stepSeconds.startTimer({ model: this.modelId });
      let items: StepSample[] = batch.map((b) => ({ sample: b.sample, stale: b.stale }));
      if (this.consensus && !batch.every((b) => b.sample.group)) items = this.weigh(items);
      m = await this.stepper!.step(items);
      end();
      if (m.rejected) {
        this.counts.rejected++;
        metrics.rejected.inc({ model: this.modelId });
        this.log.warn({ reason: m.rejected, samples: m.samples, gradNorm: m.gradNorm }, 'step rejected; no version published');
      } else if (m.samples > 0)
        ({ wv: published, blobs } = await this.writeCheckpoint(m, dropped.length, (Date.now() - stepStarted) / 1000));
    }
    for (const p of [...batch, ...dropped]) this.kafka.done(p.meta.partition, p.meta.offset);
    try {
      await this.commit(published, blobs);
    } catch (err) {
      // A commit in doubt may have published the version: its folder stays (a restart deletes it if not).
      if (published && !this.kafka.inDoubt)
        await rm(this.lineage.path(published.version), { recursive: true, force: true }).catch(() => undefined);
      throw err;
    }
    this.counts.trained += batch.length;
    // Counted once the batch is committed: a waiter that sees it can tell a step not taken.
    this.counts.batches++;
    for (const b of batch) metrics.trained.inc({ model: this.modelId, method: b.sample.method });
    if (published && m) {
      this.version = published.version;
      this.nextVersion = published.version + 1;
      this.steps = published.metrics.steps;
      metrics.steps.inc({ model: this.modelId });
      metrics.version.set({ model: this.modelId }, this.version);
      metrics.loss.set({ model: this.modelId }, m.loss);
      metrics.reward.set({ model: this.modelId }, m.meanReward);
      metrics.drift.set({ model: this.modelId }, m.logprobDrift);
      metrics.kl.set({ model: this.modelId }, m.kl);
      metrics.clip.set({ model: this.modelId }, m.clipFraction);
      metrics.tis.set({ model: this.modelId }, m.tisMean);
      metrics.mismatchKl.set({ model: this.modelId }, m.mismatchKl);
      metrics.tisTruncated.set({ model: this.modelId }, m.tisTruncated);
      this.log.info(
        {
          version: published.version,
          ...published.metrics,
          lossAfter: m.lossAfter,
          gradNorm: m.gradNorm,
          tisMean: m.tisMean,
          tisTruncated: m.tisTruncated,
          halvings: m.halvings,
          lrScale: m.lrScale,
          cutTokens: m.cutTokens,
          seconds: Number(((Date.now() - stepStarted) / 1000).toFixed(2)),
        },
        'published weight version',
      );
      this.o.onVersion?.(published);
    }
    metrics.buffered.set({ model: this.modelId }, this.batcher.size);
  }

  /**
   * The consensus is a fold over the samples the learner has finished with, so a restart folds
   * them again: every sample of this model below the group's committed offsets (those dropped
   * as stale included, which a live run never observed; the few finished above a commit, kept in
   * its metadata, are not). Undecodable records were dead-lettered when first read; skipped.
   */
  private async restoreConsensus(samplesCodec: { decode(b: Buffer): Promise<Sample> }): Promise<void> {
    const admin = this.o.kafka.admin();
    await admin.connect();
    let until: Map<number, bigint>;
    try {
      const [res] = await admin.fetchOffsets({ groupId: this.groupId, topics: [this.samplesTopic] });
      until = new Map((res?.partitions ?? []).filter((p) => BigInt(p.offset) > 0n).map((p) => [p.partition, BigInt(p.offset)]));
    } finally {
      await admin.disconnect();
    }
    if (until.size === 0) return;
    const t0 = Date.now();
    await readToEnd(
      this.o.kafka,
      this.samplesTopic,
      async (r) => {
        if (!r.value) return;
        const sample = await samplesCodec.decode(r.value).catch(() => null);
        if (!sample || sample.policyModelId !== this.modelId) return;
        this.consensus!.observe(ratedTurnOf(sample, this.lineage.sampleText));
        this.counts.consensusRestored++;
      },
      { partitions: new Set(until.keys()), until },
    );
    const stats = this.consensus!.stats();
    for (const u of stats) metrics.userWeight.set({ model: this.modelId, user: u.userId }, u.weight);
    metrics.conflicts.set({ model: this.modelId }, this.consensus!.conflicts().length);
    this.log.info({ samples: this.counts.consensusRestored, users: stats.length, ms: Date.now() - t0 }, 'user consensus restored');
  }

  /** Consensus weights for a batch; per-user weights and conflicts go to the logs and metrics. */
  private weigh(items: StepSample[]): StepSample[] {
    const { items: weighed } = weighByConsensus(this.consensus!, items, this.lineage.sampleText);
    const stats = this.consensus!.stats();
    const conflicts = this.consensus!.conflicts();
    for (const u of stats) metrics.userWeight.set({ model: this.modelId, user: u.userId }, u.weight);
    metrics.conflicts.set({ model: this.modelId }, conflicts.length);
    this.log.info({ users: stats, conflicts }, 'user consensus');
    return weighed;
  }

  /** Saves the trained weights as the next version: its WeightVersion and, with the Kafka transport, the records of its files. */
  private async writeCheckpoint(
    m: StepMetrics,
    droppedStale: number,
    stepSeconds: number,
  ): Promise<{ wv: WeightVersion; blobs: TransactionOutput[] }> {
    const version = this.nextVersion;
    // A folder with this number can only be an unpublished leftover: versions are published in order.
    await rm(this.lineage.path(version), { recursive: true, force: true });
    const trainMetrics = trainMetricsOf(m, { steps: this.steps + 1, droppedStale, stepSeconds });
    const saved = await this.lineage.save(version, this.version, trainMetrics);
    // Before the pieces are made: a reader looks for them from this time on.
    const createdAt = Date.now();
    const sent =
      this.o.weightsTransport === 'kafka'
        ? await this.transport.publication(this.modelId, version, this.lineage.path(version))
        : { uri: saved.uri, outputs: [] };
    const wv: WeightVersion = {
      modelId: this.modelId,
      version,
      parentVersion: this.version,
      uri: sent.uri,
      sha256: saved.sha256,
      format: this.lineage.format,
      baseModel: this.baseModel,
      metrics: trainMetrics,
      createdAt,
    };
    return { wv, blobs: sent.outputs };
  }

  /**
   * The version (if any: its files' pieces first, then its WeightVersion) and the dead letters,
   * with the offsets of the samples used: one transaction.
   */
  private async commit(wv: WeightVersion | null, blobs: TransactionOutput[] = []): Promise<void> {
    const dlq = this.pendingDlq.splice(0);
    const outputs: TransactionOutput[] = [...blobs];
    if (wv) outputs.push({ topic: this.o.codecs.topic('weights'), key: wv.modelId, value: await this.o.codecs.of('weights').encode(wv) });
    const dlqCodec = this.o.codecs.of('dlq');
    for (const d of dlq) outputs.push({ topic: dlqCodec.topic, key: d.key, value: await dlqCodec.encode(d.value) });
    try {
      // Retried (CONCURRENT_TRANSACTIONS, Kafka away) until it commits or the learner stops.
      await this.kafka.commit(outputs, this.stopCommits.signal);
    } catch (err) {
      // Not committed: the dead letters go in the next transaction.
      if (!this.kafka.inDoubt) this.pendingDlq.unshift(...dlq);
      throw err;
    }
    this.counts.transactions++;
  }

  private async fail(err: unknown): Promise<void> {
    if (this.stopping) return;
    this.log.error({ err: (err as Error)?.message ?? String(err) }, 'learner failed; stopping');
    this.stopping = true;
    await this.shutdown();
    this.closedReject(err);
  }

  private async stop(): Promise<void> {
    if (this.stopping) return this.closed;
    this.stopping = true;
    // A commit retrying while Kafka is away gives up after a grace period (nothing of it is committed).
    const giveUp = setTimeout(() => this.stopCommits.abort(new Error('the learner is stopping')), 15_000);
    await this.loop;
    clearTimeout(giveUp);
    await this.shutdown();
    this.closedResolve();
  }

  private async shutdown(): Promise<void> {
    this.stopCommits.abort(new Error('the learner is stopping'));
    await this.kafka?.stop();
    this.stepper?.dispose();
    this.lineage.dispose();
  }
}

/**
 * The engine a gateway serves, chosen by its options: an upstream (`upstream`), a GGUF model on
 * llama.cpp (`llama`), else the built-in tfjs policy (`builtin`). Every hot swap of the served
 * weights sets `turnstream_gateway_policy_version` and counts in `turnstream_gateway_policy_swaps_total`.
 *
 * Starting it loads the weights: for the built-in policy, version 0 is created first when the
 * store is empty (`builtin.initIfEmpty`); with Kafka, new versions from the weights topic are
 * offered as they come, fetched into the gateway's own store first when the trainer published
 * them through Kafka (gateway/weights-follower.ts).
 */
import type { Logger } from '../core/index.ts';
import type { WeightVersion } from '../schemas/index.ts';
import { initCheckpoint, loadPolicy, selectBackend, WeightStore, WeightTransport } from '../policy/index.ts';
import type { Admission } from './admission.ts';
import { BuiltinEngine } from './builtin-engine.ts';
import type { Engine } from './engine.ts';
import type { KafkaLink } from './event-sink.ts';
import { LlamaEngine } from './llama-engine.ts';
import type { GatewayMetrics } from './metrics.ts';
import type { BuiltinOptions, GatewayOptions } from './options.ts';
import { PolicyRegistry } from './policy-registry.ts';
import { ProxyEngine } from './proxy-engine.ts';
import { WeightsFollower } from './weights-follower.ts';

export interface ServedEngine {
  engine: Engine;
  /** The built-in engine's policy registry (null otherwise). */
  policies: PolicyRegistry | null;
  /** The llama.cpp engine (null otherwise). */
  llama: LlamaEngine | null;
  /** Fetches versions published through Kafka into the gateway's store (null for an upstream). */
  weights: WeightTransport | null;
}

/** Builds the engine; `admission` first, since llama.cpp gets one sequence per admitted generation. */
export function createServedEngine(options: GatewayOptions, admission: Admission, metrics: GatewayMetrics, logger: Logger): ServedEngine {
  const onSwap = (modelId: string, version: number): void => {
    metrics.policyVersion.reset();
    metrics.policyVersion.set({ model_id: modelId }, version);
    metrics.policySwaps.inc();
  };
  if (options.upstream) return { engine: new ProxyEngine(options.upstream), policies: null, llama: null, weights: null };
  if (options.llama) {
    const modelId = options.llama.model.modelId;
    const weights = new WeightTransport({ weightsDir: options.llama.weightsDir, logger });
    const llama = new LlamaEngine({
      ...options.llama,
      parallel: admission.maxConcurrent,
      remoteWeights: weights,
      logger,
      onSwap: (v) => onSwap(modelId, v),
    });
    return { engine: llama, policies: null, llama, weights };
  }
  if (!options.builtin) throw new Error('createGateway: give `builtin` (weights) or `upstream`');
  const b = options.builtin;
  const policies = new PolicyRegistry({
    weightsDir: b.weightsDir,
    modelId: b.modelId ?? 'turnstream-tiny',
    load: b.load ?? loadPolicy,
    logger,
    onSwap: (p) => onSwap(p.modelId, p.version),
  });
  const engine = new BuiltinEngine({ registry: policies, defaultMaxTokens: b.defaultMaxTokens, maxPromptTokens: b.maxPromptTokens });
  return { engine, policies, llama: null, weights: new WeightTransport({ weightsDir: b.weightsDir, logger }) };
}

/** Loads the weights to serve and, with Kafka, follows the new versions. */
export async function startServedEngine(s: ServedEngine, options: GatewayOptions, link: KafkaLink | null, logger: Logger): Promise<void> {
  const { policies, llama, weights } = s;
  if (link && weights) weights.attach(async () => ({ kafka: link.kafka, codecs: await link.ensureCodecs() }));
  const follow = (modelId: string, current: () => number | null, offer: (wv: WeightVersion) => Promise<void>): void => {
    const follower = new WeightsFollower({ modelId, transport: weights!, current, offer, logger });
    link!.followWeights((wv) => follower.onVersion(wv));
  };
  if (policies && options.builtin) {
    await loadBuiltin(policies, options.builtin, logger);
    if (link && (options.builtin.followWeights ?? true))
      follow(
        policies.modelId,
        () => policies.version,
        (wv) => policies.offer(wv),
      );
  }
  if (llama && options.llama) {
    await llama.start();
    if (link)
      follow(
        options.llama.model.modelId,
        () => llama.version,
        (wv) => llama.offer(wv),
      );
  }
}

async function loadBuiltin(policies: PolicyRegistry, b: BuiltinOptions, logger: Logger): Promise<void> {
  await selectBackend(undefined, { logger });
  const modelId = b.modelId ?? 'turnstream-tiny';
  if ((b.initIfEmpty ?? true) && !(await new WeightStore(b.weightsDir).latest(modelId))) {
    const ref = await initCheckpoint(b.weightsDir, { modelId, config: b.initConfig });
    logger.info(
      { modelId, uri: ref.uri },
      b.initConfig
        ? 'weight store was empty: created version 0 (random init)'
        : 'weight store was empty: installed the shipped base checkpoint as version 0',
    );
  }
  const p = await policies.loadInitial();
  logger.info({ modelId: p.modelId, version: p.version }, 'policy loaded');
}

/**
 * The engine a gateway serves, chosen by its options: an upstream (`upstream`), a GGUF model on
 * llama.cpp (`llama`), else the built-in tfjs policy (`builtin`). Every hot swap of the served
 * weights sets `turnstream_gateway_policy_version` and counts in `turnstream_gateway_policy_swaps_total`.
 *
 * Starting it loads the weights: for the built-in policy, version 0 is created first when the
 * store is empty (`builtin.initIfEmpty`); with Kafka, new versions from the weights topic are
 * offered as they come.
 */
import type { Logger } from '../core/index.ts';
import { initCheckpoint, loadPolicy, selectBackend, WeightStore } from '../policy/index.ts';
import type { Admission } from './admission.ts';
import { BuiltinEngine } from './builtin-engine.ts';
import type { Engine } from './engine.ts';
import type { KafkaLink } from './event-sink.ts';
import { LlamaEngine } from './llama-engine.ts';
import type { GatewayMetrics } from './metrics.ts';
import type { BuiltinOptions, GatewayOptions } from './options.ts';
import { PolicyRegistry } from './policy-registry.ts';
import { ProxyEngine } from './proxy-engine.ts';

export interface ServedEngine {
  engine: Engine;
  /** The built-in engine's policy registry (null otherwise). */
  policies: PolicyRegistry | null;
  /** The llama.cpp engine (null otherwise). */
  llama: LlamaEngine | null;
}

/** Builds the engine; `admission` first, since llama.cpp gets one sequence per admitted generation. */
export function createServedEngine(options: GatewayOptions, admission: Admission, metrics: GatewayMetrics, logger: Logger): ServedEngine {
  const onSwap = (modelId: string, version: number): void => {
    metrics.policyVersion.reset();
    metrics.policyVersion.set({ model_id: modelId }, version);
    metrics.policySwaps.inc();
  };
  if (options.upstream) return { engine: new ProxyEngine(options.upstream), policies: null, llama: null };
  if (options.llama) {
    const modelId = options.llama.model.modelId;
    const llama = new LlamaEngine({ ...options.llama, parallel: admission.maxConcurrent, logger, onSwap: (v) => onSwap(modelId, v) });
    return { engine: llama, policies: null, llama };
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
  return { engine, policies, llama: null };
}

/** Loads the weights to serve and, with Kafka, follows the new versions. */
export async function startServedEngine(s: ServedEngine, options: GatewayOptions, link: KafkaLink | null, logger: Logger): Promise<void> {
  const { policies, llama } = s;
  if (policies && options.builtin) {
    await loadBuiltin(policies, options.builtin, logger);
    if (link && (options.builtin.followWeights ?? true)) link.followWeights((wv) => policies.offer(wv));
  }
  if (llama) {
    await llama.start();
    if (link) link.followWeights((wv) => llama.offer(wv));
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

/**
 * The gateway as the stack builds it: its options from the settings (`PORT`, `HOST`, the API
 * keys, `GATEWAY_*`, `LLAMA_*`, the served model), then the caller's overrides. `turnstream
 * gateway` (and so `up`) overrides nothing but its listen address; eval, gym and bench name what
 * their gateways change.
 */
import type { Logger } from '../core/index.ts';
import { createGateway, type BuiltinOptions, type Gateway, type GatewayOptions, type KafkaLinkOptions } from '../gateway/index.ts';
import { parseBrokers } from '../streams/index.ts';
import { stackEndpoints } from './endpoints.ts';
import type { ServedModel } from './served-model.ts';
import type { StackSettings } from './settings.ts';

type LlamaOptions = NonNullable<GatewayOptions['llama']>;

/** What a caller changes of the gateway the settings describe; `llama`, `builtin`, `admission` and `streams` are merged field by field. */
export interface GatewayOverrides extends Partial<Omit<GatewayOptions, 'llama' | 'builtin' | 'kafka'>> {
  /** Another topic family, client or error handler; undefined: no Kafka (the gateway only serves). */
  kafka?: Partial<KafkaLinkOptions>;
  llama?: Partial<Omit<LlamaOptions, 'model'>> & { model?: Partial<LlamaOptions['model']> };
  builtin?: Partial<BuiltinOptions>;
}

/**
 * The gateway's options: the settings' (`served` null: the upstream engine of `settings.upstream`),
 * the overrides over them (`kafka`, `llama`, `builtin`, `admission` and `streams` field by field).
 * An override given as `undefined` removes the setting (`kafka: undefined` serves without recording).
 */
export function gatewayOptions(settings: StackSettings, served: ServedModel | null, overrides: GatewayOverrides = {}): GatewayOptions {
  const g = settings.gateway;
  const endpoints = stackEndpoints(settings);
  const base: GatewayOptions = {
    port: g.port,
    host: settings.host,
    home: settings.home,
    apiKeys: g.apiKeys,
    serviceKeys: g.serviceKeys,
    metricsKey: settings.metricsKey,
    admission: { maxConcurrent: g.maxConcurrentGenerations, maxQueue: g.maxQueuedGenerations, queueTimeoutMs: g.queueTimeoutMs },
    streams: { stallTimeoutMs: g.streamStallTimeoutMs, maxBufferedBytes: g.streamBufferBytes },
    outboxReadyMaxDepth: g.outboxReadyMaxDepth,
    outboxStallMs: g.outboxStallMs,
    captureBoundMs: g.captureWaitMs,
    defaultTurnType: g.defaultTurnType,
    bodyLimitBytes: g.bodyLimitBytes,
    generationTimeoutMs: g.generationTimeoutMs,
    shareSessions: g.shareSessions,
    sessionShareWindowMs: g.sessionShareWindowMs,
    kafka: {
      brokers: parseBrokers(endpoints.brokers),
      registryUrl: endpoints.registryUrl,
      security: settings.security,
      naming: { prefix: settings.topicPrefix },
    },
    ...engineOf(settings, served),
  };
  const { llama, builtin, admission, streams, kafka, ...rest } = overrides;
  const out: GatewayOptions = { ...base, ...rest };
  // Another topic family or client keeps the settings' security (a secured Kafka is secured for every run).
  if ('kafka' in overrides) out.kafka = kafka === undefined ? undefined : { ...base.kafka!, ...kafka };
  if (admission) out.admission = { ...base.admission, ...admission };
  if (streams) out.streams = { ...base.streams, ...streams };
  if (llama) {
    if (!base.llama) throw new Error('llama overrides for a gateway that does not serve a GGUF model');
    out.llama = { ...base.llama, ...llama, model: { ...base.llama.model, ...llama.model } };
  }
  if (builtin) {
    if (!base.builtin) throw new Error('builtin overrides for a gateway that does not serve the built-in model');
    out.builtin = { ...base.builtin, ...builtin };
  }
  return out;
}

/** The engine: the upstream (no served model), the built-in model, or the GGUF model on llama.cpp with `LLAMA_*`. */
function engineOf(settings: StackSettings, served: ServedModel | null): Pick<GatewayOptions, 'upstream' | 'builtin' | 'llama'> {
  if (!served) {
    const u = settings.upstream;
    if (!u.baseUrl) throw new Error('a gateway without a served model needs an upstream engine (UPSTREAM_BASE_URL)');
    return { upstream: { baseUrl: u.baseUrl, apiKey: u.apiKey, model: u.model } };
  }
  if (served.kind === 'builtin') return { builtin: { weightsDir: settings.weightsDir, modelId: served.modelId } };
  const l = settings.llama;
  return {
    llama: {
      model: { name: served.name, modelId: served.modelId, path: served.path, sha256: served.sha256 },
      weightsDir: settings.weightsDir,
      contextSize: l.contextSize,
      parallel: l.parallel,
      batching: l.batching,
      threads: l.threads,
      temperature: l.temperature,
      topP: l.topP,
      defaultMaxTokens: l.maxTokens,
      systemPrompt: served.systemPrompt,
      gpu: l.gpu === 'off' ? false : 'auto',
    },
  };
}

/**
 * What a run's own gateway in this process (eval, gym, bench) changes of the configured one: any
 * free port on the loopback, a home of its own, open (its clients send no key), main turns unless
 * a call says side.
 */
export function ownGateway(home: string, logger?: Logger): GatewayOverrides {
  return { port: 0, host: '127.0.0.1', home, logger, apiKeys: [], serviceKeys: [], defaultTurnType: 'main' };
}

/** A gateway built from the settings and the overrides (not started). */
export function gatewayService(
  settings: StackSettings,
  served: ServedModel | null,
  overrides: GatewayOverrides & { logger?: Logger } = {},
): Gateway {
  return createGateway(gatewayOptions(settings, served, overrides));
}

/**
 * A run's own pipeline in this process (eval's pipeline runs, gym's seeds): its topics under a
 * prefix of its own, the processors it needs and, when asked, the ClickHouse sink, each built from
 * the settings with the run's overrides. The run adds its gateways and learners (gatewayService,
 * learnerService) on the same link.
 */
import type { Logger } from '../core/index.ts';
import type { ClickhouseSinkHandle } from '../processors/index.ts';
import type { TopicNaming } from '../schemas/index.ts';
import { createEventCodecs, createKafka, ensureTopics, parseBrokers, type ProcessorHandle } from '../streams/index.ts';
import { stackEndpoints, type StackLink } from './endpoints.ts';
import { processorServices, sinkService, type ProcessorName, type ProcessorOverrides, type SinkOverrides } from './processor-services.ts';
import type { ServedModel } from './served-model.ts';
import type { StackSettings } from './settings.ts';

export interface InProcessPipelineOptions {
  /** The run's topic family (a fresh prefix). */
  naming: TopicNaming;
  clientId: string;
  /** The processors the run needs, started in this order. */
  processors: readonly ProcessorName[];
  processorOverrides?: ProcessorOverrides;
  /** Also store the run's topics in ClickHouse, with these overrides. @default no sink */
  sink?: SinkOverrides;
  /** The served model (the sample builder's teacher, unless the overrides give one). */
  served: ServedModel | null;
  /** Kafka and the registry. @default the settings' (else the local stack's) */
  endpoints?: { brokers: string[]; registryUrl: string };
  /** The kafkajs client's logger. */
  kafkaLogger?: Logger;
}

export interface InProcessPipeline {
  link: StackLink;
  processors: ProcessorHandle[];
  sink: ClickhouseSinkHandle | null;
  /** Stops the sink and the processors (errors swallowed: a run's results are kept). */
  stop(): Promise<void>;
}

/** The run's topics created and registered, its processors (and sink) started. */
export async function inProcessPipeline(settings: StackSettings, o: InProcessPipelineOptions): Promise<InProcessPipeline> {
  const e = stackEndpoints(settings);
  const brokers = o.endpoints?.brokers ?? parseBrokers(e.brokers);
  const registryUrl = o.endpoints?.registryUrl ?? e.registryUrl;
  const kafka = createKafka({ brokers, clientId: o.clientId, logger: o.kafkaLogger, security: settings.security.kafka });
  await ensureTopics(kafka, { naming: o.naming });
  const codecs = await createEventCodecs({ registryUrl, registrySecurity: settings.security.registry, naming: o.naming });
  const link: StackLink = { kafka, codecs, brokers, registryUrl, naming: o.naming };
  const processors = await processorServices(settings, o.processors, link, o.served, o.processorOverrides);
  let sink: ClickhouseSinkHandle | null = null;
  const stop = async (): Promise<void> => {
    for (const s of processors) await s.stop().catch(() => undefined);
    await sink?.stop().catch(() => undefined);
  };
  if (o.sink) {
    try {
      sink = sinkService(settings, link, { logger: o.processorOverrides?.logger, ...o.sink });
      await sink.ready;
    } catch (err) {
      await stop();
      throw err;
    }
  }
  return { link, processors, sink, stop };
}

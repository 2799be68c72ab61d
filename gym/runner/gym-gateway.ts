/**
 * The gateway a gym run plays through: the run's GGUF on llama.cpp serving one LoRA lineage,
 * rollouts decoded side by side, in a home of its own. A seed's gateway records its turns on the
 * run's topics; the base-rate measurement's only serves (no Kafka: nothing is trained on them).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KafkaLinkOptions } from '../../gateway/index.ts';
import type { Logger } from '../../core/index.ts';
import { gatewayService, ownGateway, resolveSettings, type StackSettings } from '../../stack/index.ts';
import type { GymSettings } from './gym-options.ts';
import { gymServed } from './gym-learner.ts';

/**
 * Longest model call of an OpenClaw episode: its first call sends an ~8k-token prompt (minutes on
 * a CPU), bounded by OpenClaw's own request timeout (the episode's least bound, 600 s), not by the
 * gateway's 300 s.
 */
const OPENCLAW_CALL_MS = 600_000;

/** Options of {@link startGymGateway}. */
export interface GymGatewayOptions {
  /** The configuration the gateway is built from, as `turnstream gateway`'s (stack/). @default resolveSettings() */
  stack?: StackSettings;
  /** The run's model, agent and engine settings. */
  settings: Pick<GymSettings, 'model' | 'agent' | 'parallel' | 'threads' | 'systemPrompt'>;
  /** The lineage served (its versions are read from `weightsDir`; none yet: the base). */
  modelId: string;
  /** The weight store the lineage's versions are published to. */
  weightsDir: string;
  logger: Logger;
  /** Where the turns go. @default none: the gateway only serves, and records nothing */
  kafka?: KafkaLinkOptions;
}

/** A started gym gateway. */
export interface GymGateway {
  /** Its base URL (`http://127.0.0.1:<port>`). */
  url: string;
  /** Stops it and removes its home. */
  stop(): Promise<void>;
}

export async function startGymGateway(o: GymGatewayOptions): Promise<GymGateway> {
  const s = o.settings;
  const home = await mkdtemp(join(tmpdir(), 'turnstream-gym-gw-'));
  const gw = gatewayService(o.stack ?? resolveSettings(), gymServed(s, o.modelId), {
    ...ownGateway(home, o.logger),
    // As many generations at once as llama.cpp decodes side by side.
    admission: { maxConcurrent: s.parallel },
    llama: {
      weightsDir: o.weightsDir,
      // OpenClaw's prompt is fitted to the model's own context; the built-in agent's transcripts fit in 4k.
      contextSize: s.agent === 'openclaw' ? undefined : 4096,
      parallel: s.parallel,
      threads: s.threads,
      maxPinned: 0,
    },
    ...(s.agent === 'openclaw' ? { generationTimeoutMs: OPENCLAW_CALL_MS } : {}),
    ...(o.kafka ? { kafka: o.kafka } : { kafka: undefined, capture: false }),
  });
  const stop = async (): Promise<void> => {
    await gw.stop().catch(() => undefined);
    await rm(home, { recursive: true, force: true });
  };
  try {
    return { url: await gw.start(), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

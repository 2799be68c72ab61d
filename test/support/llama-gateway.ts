/** A gateway on the llama.cpp engine serving one GGUF file (a tiny one the test writes, or a real model), for tests. */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createLogger } from '../../core/index.ts';
import { createGateway, type Gateway, type GatewayOptions } from '../../gateway/index.ts';
import { writeTinyModel, type TinyModel, type TinyModelOptions } from '../../policy/index.ts';

type LlamaOptions = NonNullable<GatewayOptions['llama']>;

/** The engine's settings past the model and where its weights live. */
export type LlamaSettings = Partial<Omit<LlamaOptions, 'model' | 'weightsDir'>>;

/**
 * A gateway (not started) on port 0 with its home in `home`, serving `model` (its name as its
 * model id too) on llama.cpp with one thread and its weight versions under `<home>/weights`;
 * `llama` adds to those engine settings, `options` to the gateway's.
 */
export function createLlamaGateway(
  home: string,
  model: { name: string; path: string | undefined; sha256: string | undefined },
  llama: LlamaSettings = {},
  options: Omit<Partial<GatewayOptions>, 'llama'> = {},
): Gateway {
  assert.ok(model.path && model.sha256, `${model.name}: a GGUF file and its sha256`);
  return createGateway({
    port: 0,
    home,
    logger: createLogger('gateway-test', 'warn'),
    llama: {
      model: { name: model.name, modelId: model.name, path: model.path, sha256: model.sha256 },
      weightsDir: join(home, 'weights'),
      threads: 1,
      ...llama,
    },
    ...options,
  });
}

/** Writes a tiny GGUF model (`tiny`) to `<home>/tiny.gguf` and starts `createLlamaGateway` on it. */
export async function startTinyLlamaGateway(
  home: string,
  tinyOptions: TinyModelOptions,
  llama: LlamaSettings = {},
): Promise<{ tiny: TinyModel; gw: Gateway; url: string }> {
  const tiny = await writeTinyModel(join(home, 'tiny.gguf'), tinyOptions);
  const gw = createLlamaGateway(home, { name: 'tiny', path: tiny.path, sha256: tiny.sha256 }, llama);
  try {
    return { tiny, gw, url: await gw.start() };
  } catch (err) {
    await gw.stop().catch(() => undefined);
    throw err;
  }
}

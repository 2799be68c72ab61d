/** A LoRA version of a llama-architecture GGUF model written into a weight store, with the WeightVersion that announces it. */
import {
  AdapterStore,
  untrainedLoraVersion,
  writeLoraAdapter,
  type AdapterVersionRef,
  type LoraConfig,
  type LoraPair,
} from '../../policy/index.ts';
import type { WeightVersion } from '../../schemas/index.ts';

/**
 * Writes `pairs` as version `version` (parent `version - 1`) of `modelId` on `base` under
 * `weightsDir`, and returns where it went and a WeightVersion for it (placeholder metrics).
 */
export async function storeLoraVersion(
  weightsDir: string,
  meta: { modelId: string; version: number; base: { name: string; sha256: string }; lora: LoraConfig },
  pairs: LoraPair[],
): Promise<{ ref: AdapterVersionRef; wv: WeightVersion }> {
  const parentVersion = meta.version - 1;
  const ref = await new AdapterStore(weightsDir).write({ ...meta, parentVersion }, (path) =>
    writeLoraAdapter(path, { architecture: 'llama', alpha: meta.lora.alpha, pairs }).then(() => undefined),
  );
  const wv = untrainedLoraVersion({ ...meta, uri: ref.uri, sha256: ref.manifest.sha256, base: ref.manifest.base });
  return { ref, wv };
}

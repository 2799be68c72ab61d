/**
 * Which weight versions may share evaluated prompts (KV caches and kept states).
 *
 * The keys and values a layer caches are computed from what enters the layer and from its own
 * attn_norm, attn_k and attn_v. An adapter on any tensor of a layer below the last changes what
 * enters every later layer, so it changes the cache at every position: a state evaluated under
 * one such adapter is wrong under another, and is never used there. Only an adapter confined to
 * what comes after the last cached values (the output head, the last layer's attn_q, attn_output
 * and feed-forward) leaves the cache as the base computes it; such a version shares the base's
 * key. Any other version's key is its adapter's sha256, so two versions with the same adapter
 * file share states, and a version served again (pinned as `name@N`) finds its own.
 */
import { openGguf } from '../policy/index.ts';

/** The key of the base weights (version 0, and adapters that leave the cache as it is). */
export const BASE_KV_KEY = 'base';

/** Tensors of the last layer whose effect reaches only the logits. */
const AFTER_LAST_KV = new Set(['attn_q', 'attn_output', 'ffn_norm', 'ffn_gate', 'ffn_up', 'ffn_down', 'ffn_gate_inp']);

/** Whether an adapter of these base tensors (GGUF names, `blk.N.attn_q.weight`…) leaves a model of `layers` layers' KV cache unchanged. */
export function leavesKvCache(tensorNames: readonly string[], layers: number): boolean {
  return tensorNames.every((name) => {
    if (/^output(_norm)?\./.test(name)) return true;
    const m = /^blk\.(\d+)\.([a-z_]+)\./.exec(name);
    return !!m && Number(m[1]) === layers - 1 && AFTER_LAST_KV.has(m[2]);
  });
}

/** The KV key of a version: BASE_KV_KEY, or its adapter's sha256. */
export async function kvKeyOf(ref: { adapterPath: string | null; manifest: { sha256: string } }, layers: number): Promise<string> {
  if (!ref.adapterPath) return BASE_KV_KEY;
  const file = await openGguf(ref.adapterPath);
  try {
    return leavesKvCache(
      file.tensors.map((t) => t.name.replace(/\.lora_[ab]$/, '')),
      layers,
    )
      ? BASE_KV_KEY
      : `sha256:${ref.manifest.sha256}`;
  } finally {
    await file.close();
  }
}

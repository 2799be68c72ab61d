/**
 * A warning when a step's rollouts were not drawn from the policy the trainer scores. The engine
 * (llama.cpp, quantized) and the trainer (fp32) differ a little on every token: 0.05–0.07 nats of
 * mean |Δ log-prob| on SmolLM2-135M Q4_1. When llama.cpp decoded several sequences of one context
 * as one batch it was 0.8–1.7 nats, and nothing said so; truncated importance sampling only
 * lowers the weight of such tokens, it does not make the rollouts the policy's.
 */
/** Mean |Δ log-prob| (nats) above which a step's mismatch is reported. */
export const MISMATCH_WARN_NATS = 0.3;

/** The warning for a step's mismatch, or null when it is within what quantization explains. */
export function mismatchWarning(m: { absLogprob: number } | null | undefined): string | null {
  if (!m || !(m.absLogprob > MISMATCH_WARN_NATS)) return null;
  return (
    `the engine's log-probs and the trainer's differ by ${m.absLogprob.toFixed(2)} nats a token (quantization explains under ${MISMATCH_WARN_NATS}): ` +
    `the rollouts are not the policy being trained; docs/gym.md ("engine and trainer disagree") lists the causes`
  );
}

/**
 * Draws a token from the model's own distribution the way llama.cpp's sampler chain does (top-k,
 * top-p, min-p on the model's probabilities, then temperature, then a seeded draw), for requests
 * that want `logprobs`: llama.cpp then hands over the whole distribution, the gateway reports its
 * log-probs and draws the token itself.
 */

export interface DrawOptions {
  /** 0 = greedy. */
  temperature: number;
  topP: number;
  /** 0 = off. @default 0 */
  topK?: number;
  /** @default 0 */
  minP?: number;
}

export interface Drawn {
  token: number;
  /** The model's own probability of the token (temperature 1, untruncated). */
  probability: number;
  /** The probability it was drawn with (after truncation and temperature). */
  drawnProbability: number;
}

/** `probabilities` sorted from most to least likely, as node-llama-cpp returns them. */
export function drawToken(probabilities: ReadonlyMap<number, number>, o: DrawOptions, random: () => number): Drawn {
  const entries = [...probabilities];
  if (entries.length === 0) throw new Error('empty distribution');
  if (o.temperature <= 0) return { token: entries[0][0], probability: entries[0][1], drawnProbability: 1 };
  let kept = o.topK && o.topK > 0 ? entries.slice(0, o.topK) : entries;
  if (o.topP < 1) {
    let cum = 0;
    let n = 0;
    while (n < kept.length && cum < o.topP) cum += kept[n++][1];
    kept = kept.slice(0, Math.max(1, n));
  }
  if (o.minP && o.minP > 0) kept = kept.filter(([, p]) => p >= o.minP! * entries[0][1]);
  const weights = kept.map(([, p]) => Math.pow(p, 1 / o.temperature));
  const total = weights.reduce((a, b) => a + b, 0);
  let r = random() * total;
  let i = 0;
  while (i < kept.length - 1 && r >= weights[i]) r -= weights[i++];
  return { token: kept[i][0], probability: kept[i][1], drawnProbability: weights[i] / total };
}

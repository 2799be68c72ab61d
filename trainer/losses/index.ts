export { sampleTokenMean, tokenMean } from './masked-mean.ts';
export { ppoClippedLoss, type PpoClippedLossInput, type PpoClippedLossOutput } from './ppo-clipped-loss.ts';
export { binaryRlAdvantages, combinedAdvantages, opdAdvantages, type CombinedAdvantagesInput } from './advantages.ts';
export { topKReverseKl, type TopKReverseKlInput, type TopKReverseKlOutput } from './top-k-reverse-kl.ts';
export { klLowVar, regularizedLoss, tokenEntropy, type RegularizedLossInput } from './regularizers.ts';
export { logprobDrift } from './logprob-drift.ts';

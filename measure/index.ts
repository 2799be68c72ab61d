/**
 * What eval and gym measure with: the check language of personas and verifiers, the paired
 * permutation test, and the learning-curve charts. Below both, so that they are siblings.
 */
export {
  CHECK_OPERATORS,
  compileCheck,
  wordCount,
  type CheckFn,
  type CheckOperator,
  type PersonaCheck,
  type RegexSpec,
} from './check-language.ts';
export { mean, sd, pairedPermutationTest, PERMUTATION_DEFAULTS, type PairedTest, type PermutationOptions } from './stats.ts';
export { CHART_COLORS, lineChart, pngRendererError, seedSeries, svgToPng, type Series } from './charts.ts';

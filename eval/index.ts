// The eval's public surface: what other folders may use.
export { CHECK_OPERATORS, compileCheck, type CheckFn, type PersonaCheck, type RegexSpec } from './persona-check.ts';
export { pairedPermutationTest, mean, type PairedTest } from './stats.ts';
export { lineChart, svgToPng, type Series } from './report.ts';

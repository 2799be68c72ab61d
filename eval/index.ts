// The eval's public surface: what other folders may use.
export { CHECK_OPERATORS, compileCheck, type CheckFn, type PersonaCheck, type RegexSpec } from './persona-check.ts';

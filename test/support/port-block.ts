/** Ports for a stack of a test's own (infra/ports.ts has them, for chaos --cluster too). */
export { distinctFreePorts, freePortBlock } from '../../infra/index.ts';

import { createRequire } from 'node:module';
import type { Logger } from 'pino';

export type { Logger };

let logFd: 1 | 2 = 1;

/**
 * Where loggers created from now on write their JSON lines: stdout (1, the default) or stderr
 * (2). A command whose stdout is one JSON object (`--json`) sends its logs to stderr.
 */
export function setLogFd(fd: 1 | 2): void {
  logFd = fd;
}

// pino is loaded with the first logger, not with core/index.ts, which every command loads
// (`turnstream doctor` makes none).
let pinoModule: typeof import('pino') | undefined;
const loadPino = (): typeof import('pino') => (pinoModule ??= createRequire(import.meta.url)('pino') as typeof import('pino'));

/** One structured logger per service. LOG_LEVEL is read here, as pino users expect, so that
 * tests and operators can quiet every service at once. JSON lines on stdout (see `setLogFd`). */
export function createLogger(name: string, level: string = process.env.LOG_LEVEL ?? 'info'): Logger {
  const { pino } = loadPino();
  return logFd === 1 ? pino({ name, level }) : pino({ name, level }, pino.destination({ fd: logFd, sync: true }));
}

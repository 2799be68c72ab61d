import { pino, type Logger } from 'pino';

export type { Logger };

/** One structured logger per service. LOG_LEVEL is read here, as pino users expect, so that
 * tests and operators can quiet every service at once. JSON lines on stdout. */
export function createLogger(name: string, level: string = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({ name, level });
}

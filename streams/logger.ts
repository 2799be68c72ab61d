import { pino, type Logger } from 'pino';

export type { Logger };

/** One structured logger per service; level from the options, JSON lines on stdout. */
export function createLogger(name: string, level = 'info'): Logger {
  return pino({ name, level });
}

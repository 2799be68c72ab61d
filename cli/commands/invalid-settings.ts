/** How a command ends when its configuration or flags are not allowed. */
import { ErrorCodes, TurnstreamError } from '../../streams/errors.ts';

/**
 * Runs `read` (loadConfig, a command's flag parsing); when it throws TS_ERR_INVALID_INPUT the
 * command ends at once with that one message on stderr and exit code 2 (usage), no stack trace.
 */
export function orExitOnInvalidSettings<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (!(err instanceof TurnstreamError) || err.code !== ErrorCodes.INVALID_INPUT) throw err;
    process.stderr.write(`turnstream: ${err.message} (${err.code})\n`);
    process.exit(2);
  }
}

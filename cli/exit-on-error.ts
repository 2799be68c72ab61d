/**
 * How a command ends on an error: one line on stderr, `turnstream: <message> (<code>)`, and exit
 * code 2 for bad input (a flag, a setting, a file that is not there) or 1 for anything else. No
 * stack trace unless LOG_LEVEL is debug or trace.
 *
 * Also for errors nobody caught: the tfjs wasm backend (emscripten) installs an
 * `uncaughtException` handler that rethrows, and Node then prints the line it was rethrown
 * from, the module's entire minified source, before the message. These handlers are installed
 * first, so they run first and end the process with the one line.
 */
import { ErrorCodes, TurnstreamError, invalidInput, toTurnstreamError } from '../core/index.ts';

/** A TurnstreamError for anything thrown; a missing file named on the command line is bad input. */
export function asCliError(err: unknown): TurnstreamError {
  if (err instanceof TurnstreamError) return err;
  const sys = err as NodeJS.ErrnoException | null;
  if (sys && (sys.code === 'ENOENT' || sys.code === 'EISDIR' || sys.code === 'ENOTDIR') && typeof sys.path === 'string') {
    return invalidInput(`${sys.code === 'ENOENT' ? 'no such file' : 'not a file'}: ${sys.path}`, undefined, err);
  }
  return toTurnstreamError(err);
}

/** The one line a failed command prints (newlines in the message folded). */
export function errorLine(err: TurnstreamError): string {
  return `turnstream: ${err.message.replace(/\s*\n\s*/g, ' ').trim() || 'failed'} (${err.code})`;
}

export function exitOnError(err: unknown): never {
  const e = asCliError(err);
  process.stderr.write(`${errorLine(e)}\n`);
  if (/^(debug|trace)$/.test(process.env.LOG_LEVEL ?? '') && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
  process.exit(e.code === ErrorCodes.INVALID_INPUT ? 2 : 1);
}

let installed = false;

/** Ends the process with one line on any uncaught exception or unhandled rejection. */
export function installExitOnError(): void {
  if (installed) return;
  installed = true;
  process.on('uncaughtException', exitOnError);
  process.on('unhandledRejection', exitOnError);
}

/**
 * Lets SIGINT and SIGTERM end the process at once, for commands with nothing to flush that hold
 * the event loop in long synchronous steps (a LoRA step in tfjs takes seconds): node-llama-cpp's
 * lockfile hooks both signals on import, and a hooked signal waits for the event loop
 * (`turnstream eval` exited 9–25 s after Ctrl-C).
 */
export function endAtOnceOnSignals(): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.removeAllListeners(signal);
}

/**
 * `--json`: a command's stdout is exactly one JSON object, whatever the code below it prints.
 * Every command that has a `--json` flag gets this without doing anything: before its action
 * runs, loggers are sent to stderr, and `process.stdout.write` (which `console.log` and libraries
 * use too) passes on only a chunk that is a whole JSON object; any other output goes to stderr.
 * The command prints its result with `process.stdout.write(JSON.stringify(result))`, as before.
 */
import { setLogFd } from '../core/index.ts';

let active = false;

function isJsonObject(chunk: unknown): boolean {
  const text = typeof chunk === 'string' ? chunk : chunk instanceof Uint8Array ? Buffer.from(chunk).toString('utf8') : '';
  const t = text.trim();
  if (!t.startsWith('{') || !t.endsWith('}')) return false;
  try {
    const v: unknown = JSON.parse(t);
    return v !== null && typeof v === 'object' && !Array.isArray(v);
  } catch {
    return false;
  }
}

/** From now on: logs to stderr, and stdout only for whole JSON objects. Idempotent. */
export function useJsonOutput(): void {
  if (active) return;
  active = true;
  setLogFd(2);
  const toStdout = process.stdout.write.bind(process.stdout);
  const toStderr = process.stderr.write.bind(process.stderr);
  process.stdout.write = ((chunk: unknown, ...rest: unknown[]) =>
    (isJsonObject(chunk) ? toStdout : toStderr)(chunk as string, ...(rest as []))) as typeof process.stdout.write;
}

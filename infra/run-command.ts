import { spawn } from 'node:child_process';
import { ErrorCodes, TurnstreamError } from '../core/index.ts';

/** Runs a short command to completion; rejects with UNAVAILABLE and its output on failure. */
export function runCommand(
  command: string,
  args: readonly string[],
  options: {
    cwd?: string;
    what: string;
    timeoutMs?: number;
    /** The arguments hold credentials: a failure names the command only. @default false */
    secretArgs?: boolean;
  },
): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (b: Buffer) => (output += b.toString()));
    child.stderr.on('data', (b: Buffer) => (output += b.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 600_000);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new TurnstreamError(ErrorCodes.UNAVAILABLE, `${options.what} failed: ${err.message}`, { cause: err, retriable: false }));
    });
    child.once('close', (code, sig) => {
      clearTimeout(timer);
      if (code === 0) resolvePromise(output);
      else {
        const tail = output.trimEnd().split('\n').slice(-25).join('\n');
        reject(
          new TurnstreamError(
            ErrorCodes.UNAVAILABLE,
            `${options.what} failed (${sig ?? `exit ${code}`}): ${command} ${options.secretArgs ? '(arguments not shown: they hold credentials)' : args.join(' ')}\n${tail}`,
            { retriable: false },
          ),
        );
      }
    });
  });
}

/**
 * Runs one sandbox program line and watches it: output kept up to the limit while it streams,
 * the wall clock, an abort signal. The program runs under `setpriv --pdeathsig KILL`, so it dies
 * with this process (Ctrl-C, a crash, kill -9): each sandbox's init dies with it in turn, and
 * the kernel kills everything left in the sandbox's PID namespace. A kill that the init
 * survives (see pipe-holders.ts) is finished by killing whatever still holds the pipes. When this process is root the
 * program runs as the unprivileged `runAs` user (see limits.ts for why). Where the sandbox has a
 * cgroup, the program first waits at a gate (a shell reading fd 4) while this process moves it
 * into the cgroup, and only then execs the sandbox: nothing of the sandbox runs outside it.
 */
import { spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { ErrorCodes, TurnstreamError } from '../../core/index.ts';
import { classifyEnd, commandEnd } from './limits.ts';
import { OutputCap } from './output-cap.ts';
import { killPipeHolders, stdioPipes } from './pipe-holders.ts';
import type { ExecResult, SandboxLimits } from './sandbox.ts';
import type { Owner } from './workspace.ts';

/** A host program line to run. */
export interface Sandboxed {
  /** The sandbox's program line (bwrap … or unshare …). */
  argv: readonly string[];
  /** Its environment. */
  env: Readonly<Record<string, string>>;
  /** `setpriv` on the host. */
  setpriv: string;
  /** The user to run as (when this process is root). */
  runAs?: Owner;
  /** The cgroup the program joins before it starts the sandbox: `sh` on the host, and the move. */
  gate?: { sh: string; join(pid: number): void };
}

/** The gate's fd, and the shell that waits on it: a line means "you are in the cgroup", EOF (this process died) means stop. */
const GATE_FD = 4;
const GATE = `read _ <&${GATE_FD} || exit 125; exec "$@" ${GATE_FD}<&-`;

/** How to watch it. */
export interface Watch {
  limits: SandboxLimits;
  stdin?: string | Uint8Array;
  signal?: AbortSignal;
}

/**
 * Runs the program line to its end (or kill). Resolves once its stdout and stderr are closed:
 * every process that held them is gone.
 * @throws TurnstreamError TS_ERR_ABORTED when `signal` aborts; TS_ERR_PREREQUISITE when the program cannot start
 */
export function runSandboxed(s: Sandboxed, w: Watch): Promise<ExecResult> {
  if (w.signal?.aborted) return Promise.reject(aborted());
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const argv = s.gate ? [s.gate.sh, '-c', GATE, 'turnstream-gate', ...s.argv] : s.argv;
    const child = spawn(s.setpriv, ['--pdeathsig', 'KILL', '--', ...argv], {
      // fd 3: the lifeline (lifeline.ts), held open here for as long as this process lives; fd 4: the gate
      stdio: [w.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe', 'pipe', ...(s.gate ? (['pipe'] as const) : [])],
      env: { ...s.env },
      cwd: '/',
      ...(s.runAs ? { uid: s.runAs.uid, gid: s.runAs.gid } : {}),
    });
    const cap = new OutputCap(w.limits.outputBytes);
    const ended = { wall: false, output: false, aborted: false };
    let unjoined: unknown;
    let settled = false;
    const pipes = child.pid === undefined ? new Set<string>() : stdioPipes(child.pid);
    let sweep: NodeJS.Timeout | undefined;
    const kill = (): void => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      // should the init outlive the outer process (killed as it started), it is found by the pipes it holds
      sweep ??= setInterval(() => killPipeHolders(pipes), SWEEP_MS);
    };
    // past the limit the rest is read and dropped (not left in the pipe), until the kill closes it
    const keep = (stream: 'stdout' | 'stderr') => (chunk: Buffer) => {
      if (!cap.push(stream, chunk) && !ended.output && !ended.wall && !ended.aborted) {
        ended.output = true;
        kill();
      }
    };
    child.stdout?.on('data', keep('stdout'));
    child.stderr?.on('data', keep('stderr'));
    const lifeline = child.stdio[3] as Readable | null;
    lifeline?.on('error', () => undefined).resume(); // anything a command writes into it is dropped
    if (child.stdin) {
      child.stdin.on('error', () => undefined); // a command that does not read its stdin closes the pipe early
      child.stdin.end(w.stdin);
    }
    if (s.gate && child.pid !== undefined) {
      const gate = child.stdio[GATE_FD] as Writable;
      gate.on('error', () => undefined); // a program killed at the gate closes it
      try {
        s.gate.join(child.pid);
        gate.end('\n');
      } catch (err) {
        unjoined = err;
        gate.destroy();
        kill();
      }
    }
    const timer = setTimeout(() => {
      if (!ended.output && !ended.aborted) ended.wall = true;
      kill();
    }, w.limits.wallMs);
    const onAbort = (): void => {
      if (!ended.output && !ended.wall) ended.aborted = true;
      kill();
    };
    w.signal?.addEventListener('abort', onAbort, { once: true });
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      clearInterval(sweep);
      w.signal?.removeEventListener('abort', onAbort);
      return true;
    };
    child.once('error', (err) => {
      // only a failed start: a running child's kill errors are not emitted for SIGKILL of a live process
      if (child.pid !== undefined || !settle()) return;
      reject(new TurnstreamError(ErrorCodes.PREREQUISITE, `the sandbox could not start: ${err.message}`, { cause: err }));
    });
    child.once('close', (code, sig) => {
      if (!settle()) return;
      if (unjoined !== undefined) {
        const why = (unjoined as NodeJS.ErrnoException).code ?? (unjoined as Error).message;
        reject(
          new TurnstreamError(
            ErrorCodes.PREREQUISITE,
            `the sandbox's command could not join the sandbox's cgroup (${why}), so it was not run`,
            {
              cause: unjoined,
            },
          ),
        );
        return;
      }
      if (ended.aborted) {
        reject(aborted());
        return;
      }
      const end = commandEnd(code, sig);
      const stderr = cap.text('stderr');
      const killedBy = classifyEnd({ wall: ended.wall, output: ended.output, exitCode: end.exitCode, signal: end.signal, stderr });
      resolve({
        ...end,
        stdout: cap.text('stdout'),
        stderr,
        truncated: cap.truncated,
        timedOut: ended.wall,
        ...(killedBy ? { killedBy } : {}),
        wallMs: Math.round(performance.now() - started),
      });
    });
  });
}

/** How long a killed sandbox may take to close its pipes before its pipe holders are killed (and again at this pace). */
const SWEEP_MS = 250;

const aborted = (): TurnstreamError => new TurnstreamError(ErrorCodes.ABORTED, 'the sandboxed command was aborted');

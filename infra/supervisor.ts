/**
 * Runs turnstream services as child processes: logs to files, restarts a service that dies,
 * and stops them all in order. A service is never given up on: each crash within
 * `crashWindowMs` of the previous ones doubles the wait before the next start (0.5 s, 1 s, 2 s …
 * up to `maxRestartDelayMs`); after `maxCrashes` of them it is reported `crash-looping`, and
 * still restarted, so a service that crashed while Kafka or the registry was away comes back
 * once they do. A service that stays up for `crashWindowMs` starts the count afresh.
 *
 * A service's log (`<logDir>/<name>.log`, its stdout and stderr) is rotated by size, as
 * logrotate does: past `logMaxBytes` it becomes `<name>.log.1`, the one before `<name>.log.2`,
 * and so on up to `logKeep` files; the oldest is removed. One log stream per service outlives its
 * restarts, so a crash loop's output lands in the same rotation.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { createStream, type RotatingFileStream } from 'rotating-file-stream';
import { invalidInput } from '../core/index.ts';

/** Size at which a service's log is rotated (50 MiB, as Kafka's own log). */
export const DEFAULT_LOG_MAX_BYTES = 50 * 1024 * 1024;
/** Rotated logs kept per service besides the current one. */
export const DEFAULT_LOG_KEEP = 3;

export interface ServiceSpec {
  /** Shown in the status table and used as the log file name. */
  name: string;
  /** Arguments of `turnstream` (e.g. ['process', 'judge']). */
  args: string[];
  /** Where it listens, if it does. */
  url?: string;
  /** Resolves true when the service is ready (default: the process has stayed alive for `settleMs`). */
  healthy?: () => Promise<boolean>;
  /** Variables set over the supervisor's environment for this service only (a home of its own). @default none */
  env?: NodeJS.ProcessEnv;
}

export interface SupervisorOptions {
  /** The `turnstream` entry script. */
  bin: string;
  /** Folder of the services' log files. */
  logDir: string;
  /** Environment of the children. */
  env: NodeJS.ProcessEnv;
  /** Crashes within `crashWindowMs` after which a service is reported `crash-looping` (it is still restarted). @default 5 */
  maxCrashes?: number;
  /** Crashes closer together than this count as one crash loop. @default 60000 */
  crashWindowMs?: number;
  /** Wait before the first restart; doubles with each crash of a loop. @default 500 */
  restartDelayMs?: number;
  /** Longest wait between restarts. @default 60000 */
  maxRestartDelayMs?: number;
  /** Time a child has to exit after SIGTERM before SIGKILL. @default 15000 */
  stopTimeoutMs?: number;
  /** How long a service without a health check must stay alive to count as ready. @default 2000 */
  settleMs?: number;
  /** A service's log is rotated once it reaches this size. `TURNSTREAM_LOG_MAX_BYTES` @default 52428800 (50 MiB) */
  logMaxBytes?: number;
  /** Rotated logs kept per service (`<name>.log.1` … `.N`), the oldest removed. `TURNSTREAM_LOG_KEEP` @default 3 */
  logKeep?: number;
  /** Called on every state change. */
  onChange?: (name: string, state: ServiceState, detail?: string) => void;
}

export type ServiceState = 'starting' | 'running' | 'ready' | 'restarting' | 'crash-looping' | 'stopped';

interface Slot {
  spec: ServiceSpec;
  child?: ChildProcess;
  log: RotatingFileStream;
  state: ServiceState;
  /** Crashes in the current loop. */
  crashes: number;
  lastCrashAt?: number;
  launchedAt: number;
  restartTimer?: NodeJS.Timeout;
  /** Stopped on purpose ({@link Supervisor.stop}): its exit is not a crash. */
  stopping?: boolean;
}

export class Supervisor {
  private readonly o: SupervisorOptions;
  private readonly slots = new Map<string, Slot>();
  private stopping = false;

  constructor(options: SupervisorOptions) {
    this.o = options;
    mkdirSync(options.logDir, { recursive: true });
  }

  start(spec: ServiceSpec): void {
    const slot: Slot = {
      spec,
      log: rotatingLog(
        join(this.o.logDir, `${spec.name}.log`),
        this.o.logMaxBytes ?? DEFAULT_LOG_MAX_BYTES,
        this.o.logKeep ?? DEFAULT_LOG_KEEP,
      ),
      state: 'starting',
      crashes: 0,
      launchedAt: 0,
    };
    this.slots.set(spec.name, slot);
    this.launch(slot);
  }

  states(): Array<{ name: string; state: ServiceState; pid: number | undefined; url: string | undefined; log: string }> {
    return [...this.slots.values()].map((s) => ({
      name: s.spec.name,
      state: s.state,
      pid: s.child?.pid,
      url: s.spec.url,
      log: join(this.o.logDir, `${s.spec.name}.log`),
    }));
  }

  /** Polls every service's health until all are ready (or failed), up to `timeoutMs`. */
  async waitReady(timeoutMs: number): Promise<boolean> {
    const t0 = Date.now();
    while (Date.now() - t0 < timeoutMs) {
      for (const s of this.slots.values()) {
        if (s.state !== 'running') continue;
        const ok = s.spec.healthy ? await s.spec.healthy().catch(() => false) : Date.now() - s.launchedAt >= (this.o.settleMs ?? 2000);
        if (ok) this.set(s, 'ready');
      }
      const states = [...this.slots.values()].map((s) => s.state);
      if (states.every((st) => st === 'ready' || st === 'crash-looping')) return states.every((st) => st === 'ready');
      await new Promise((r) => setTimeout(r, 500));
    }
    return false;
  }

  private set(slot: Slot, state: ServiceState, detail?: string): void {
    if (slot.state === state && !detail) return;
    slot.state = state;
    this.o.onChange?.(slot.spec.name, state, detail);
  }

  private launch(slot: Slot): void {
    const env = slot.spec.env ? { ...this.o.env, ...slot.spec.env } : this.o.env;
    const child = spawn(process.execPath, [this.o.bin, ...slot.spec.args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    slot.child = child;
    slot.launchedAt = Date.now();
    child.stdout?.pipe(slot.log, { end: false });
    child.stderr?.pipe(slot.log, { end: false });
    this.set(slot, 'running');
    child.once('exit', (code, signal) => {
      slot.child = undefined;
      if (this.stopping || slot.stopping) return this.set(slot, 'stopped');
      const now = Date.now();
      const window = this.o.crashWindowMs ?? 60000;
      // Crashes chain into a loop while each comes within the window of the one before (the
      // wait before its start not counted).
      const inLoop = slot.lastCrashAt !== undefined && now - slot.lastCrashAt < window + this.delayFor(slot.crashes);
      slot.crashes = inLoop ? slot.crashes + 1 : 1;
      slot.lastCrashAt = now;
      const delay = this.delayFor(slot.crashes);
      const looping = slot.crashes >= (this.o.maxCrashes ?? 5);
      const detail = `exited with ${signal ?? code}${looping ? ` (${slot.crashes} crashes in a row)` : ''}; next start in ${(delay / 1000).toFixed(1)} s; see ${join(this.o.logDir, `${slot.spec.name}.log`)}`;
      this.set(slot, looping ? 'crash-looping' : 'restarting', detail);
      slot.restartTimer = setTimeout(() => this.launch(slot), delay);
    });
  }

  /** The wait before restarting after the `n`th crash of a loop. */
  private delayFor(n: number): number {
    return Math.min(this.o.maxRestartDelayMs ?? 60000, (this.o.restartDelayMs ?? 500) * 2 ** Math.max(0, n - 1));
  }

  /**
   * Stops one service as {@link stopAll} stops each (SIGTERM, SIGKILL past the timeout) and does not
   * restart it; `start` with the same name starts it again (a scale-in, a rolling restart).
   * @throws Error when no service has that name
   */
  async stop(name: string): Promise<void> {
    const slot = this.slots.get(name);
    if (!slot) throw new Error(`no service named ${name}`);
    slot.stopping = true;
    clearTimeout(slot.restartTimer);
    await this.terminate(slot);
    this.set(slot, 'stopped');
    await new Promise<void>((resolve) => slot.log.end(resolve));
    this.slots.delete(name);
  }

  /** SIGTERM to `slot`'s process, SIGKILL if it outlives the stop timeout; resolves once it exited. */
  private terminate(slot: Slot): Promise<void> {
    return new Promise<void>((resolve) => {
      const child = slot.child;
      if (!child || child.exitCode !== null) return resolve();
      const kill = setTimeout(() => child.kill('SIGKILL'), this.o.stopTimeoutMs ?? 15000);
      child.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
      child.kill('SIGTERM');
    });
  }

  /** SIGTERM to every service (in reverse start order), SIGKILL to whatever outlives the timeout. */
  async stopAll(): Promise<void> {
    this.stopping = true;
    const slots = [...this.slots.values()].reverse();
    for (const s of slots) clearTimeout(s.restartTimer);
    await Promise.all(slots.map((s) => this.terminate(s)));
    for (const s of slots) this.set(s, 'stopped');
    // The logs' last lines are on disk when this returns.
    await Promise.all(slots.map((s) => new Promise<void>((resolve) => s.log.end(resolve))));
  }
}

/** Appends to `file`, rotated past `maxBytes` into `file.1` … `file.<keep>`. */
function rotatingLog(file: string, maxBytes: number, keep: number): RotatingFileStream {
  if (!Number.isInteger(maxBytes) || maxBytes < 1)
    throw invalidInput(`logMaxBytes must be an integer >= 1 (got ${maxBytes})`, 'logMaxBytes');
  if (!Number.isInteger(keep) || keep < 1) throw invalidInput(`logKeep must be an integer >= 1 (got ${keep})`, 'logKeep');
  const log = createStream(basename(file), { path: dirname(file), size: `${maxBytes}B`, rotate: keep });
  // A failed rotation (a full disk) must not take the supervisor down; the service keeps running.
  log.on('error', (err) => process.stderr.write(`turnstream: log ${file}: ${err.message}\n`));
  return log;
}

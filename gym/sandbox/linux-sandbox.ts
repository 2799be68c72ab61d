/**
 * A sandbox over one workspace: each command a fresh set of namespaces (bubblewrap's or
 * unshare's) over the same workspace, so nothing a command starts outlives it and only files
 * carry from one command to the next. Every command's processes join the sandbox's cgroup,
 * where it has one, so its caps hold for all of them together.
 */
import { createLogger, ErrorCodes, invalidInput, TurnstreamError } from '../../core/index.ts';
import type { SandboxHost } from './detect-sandbox.ts';
import { lifelineArgv } from './lifeline.ts';
import { prlimitArgv, resolveLimits } from './limits.ts';
import type { RolloutCgroup } from './rollout-cgroup.ts';
import { runSandboxed } from './run-sandboxed.ts';
import {
  SANDBOX_WORKSPACE,
  type ExecOptions,
  type ExecResult,
  type Sandbox,
  type SandboxCapsInForce,
  type SandboxKind,
  type SandboxLimits,
  type SandboxUsage,
} from './sandbox.ts';
import type { Workspace } from './workspace.ts';

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function checkEnv(env: Readonly<Record<string, string>>): void {
  for (const [k, v] of Object.entries(env)) {
    if (!ENV_NAME.test(k)) throw invalidInput(`environment variable name ${JSON.stringify(k)} is not a shell name`, 'env');
    if (typeof v !== 'string' || v.includes('\0')) throw invalidInput(`environment variable ${k} must be a string without NUL`, 'env');
  }
}

export class LinuxSandbox implements Sandbox {
  private readonly running = new Set<AbortController>();
  private readonly pending = new Set<Promise<unknown>>();
  private disposed = false;

  constructor(
    private readonly host: SandboxHost,
    private readonly workspace: Workspace,
    readonly limits: Readonly<SandboxLimits>,
    private readonly env: Readonly<Record<string, string>>,
    private readonly pythonProgram: string,
    readonly caps: Readonly<SandboxCapsInForce>,
    private readonly cgroup?: RolloutCgroup,
  ) {
    checkEnv(env);
  }

  usage(): SandboxUsage | undefined {
    return this.cgroup?.usage();
  }

  get kind(): SandboxKind {
    return this.host.backend.kind;
  }

  get hostWorkspace(): string {
    return this.workspace.dir;
  }

  exec(argv: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
    const run = this.run(argv, options);
    this.pending.add(run);
    void run.finally(() => this.pending.delete(run)).catch(() => undefined);
    return run;
  }

  sh(command: string, options?: ExecOptions): Promise<ExecResult> {
    return this.exec(['sh', '-c', command], options);
  }

  python(code: string, options?: ExecOptions): Promise<ExecResult> {
    return this.exec([this.pythonProgram, '-I', '-c', code], options);
  }

  readFile(path: string, options: { maxBytes?: number } = {}): Promise<string> {
    return this.workspace.readFile(path, options.maxBytes);
  }

  writeFile(path: string, content: string | Uint8Array): Promise<void> {
    return this.workspace.writeFile(path, content);
  }

  writeFiles(files: Readonly<Record<string, string>>): Promise<void> {
    return this.workspace.writeFiles(files);
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    for (const ac of this.running) ac.abort();
    await Promise.allSettled([...this.pending]);
    try {
      if (this.cgroup && !(await this.cgroup.remove()))
        createLogger('gym-sandbox').warn(
          { cgroup: this.cgroup.memoryDir, pids: this.cgroup.pids() },
          "a sandbox's cgroup still has processes after 5 s; its janitor or the next run removes it",
        );
    } finally {
      await this.workspace.dispose();
    }
  }

  private async run(argv: readonly string[], options: ExecOptions): Promise<ExecResult> {
    if (this.disposed) throw new TurnstreamError(ErrorCodes.INVALID_INPUT, 'the sandbox has been disposed');
    if (!Array.isArray(argv) || argv.length === 0 || argv.some((a) => typeof a !== 'string' || a.includes('\0'))) {
      throw invalidInput('a command is a non-empty list of strings without NUL bytes', 'argv');
    }
    const limits = resolveLimits(this.limits, options.limits);
    const env = { ...this.env, ...options.env };
    checkEnv(env);
    const cwd = await this.workspace.sandboxDir(options.cwd, SANDBOX_WORKSPACE);
    const ac = new AbortController();
    const forward = () => ac.abort();
    if (options.signal?.aborted) ac.abort();
    options.signal?.addEventListener('abort', forward, { once: true });
    this.running.add(ac);
    try {
      const launch = {
        box: this.workspace,
        system: this.host.system,
        env,
        cwd,
        command: [...lifelineArgv(), ...prlimitArgv(this.host.prlimit, limits), ...argv],
      };
      const cg = this.cgroup;
      const oomBefore = cg?.usage()?.oomKills ?? 0;
      const r = await runSandboxed(
        {
          argv: this.host.backend.argv(launch),
          env: this.host.backend.hostEnv,
          setpriv: this.host.setpriv,
          runAs: this.host.runAs,
          ...(cg && this.host.sh ? { gate: { sh: this.host.sh, join: (pid: number) => cg.join(pid) } } : {}),
        },
        { limits, stdin: options.stdin, signal: ac.signal },
      );
      // a failed command that ran into the sandbox's memory cap: the kernel killed one of its processes (SIGKILL, counted by the cgroup)
      if (cg && !r.killedBy && r.exitCode !== 0 && (cg.usage()?.oomKills ?? 0) > oomBefore) return { ...r, killedBy: 'memory' };
      return r;
    } finally {
      this.running.delete(ac);
      options.signal?.removeEventListener('abort', forward);
    }
  }
}

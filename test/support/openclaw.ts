/**
 * The real OpenClaw agent for tests: npm `openclaw` at a pinned version, run under Node 24,
 * installed by integrations/openclaw (ensure-openclaw.ts) once into a cache folder
 * ($TURNSTREAM_OPENCLAW_CACHE, else ~/.cache/turnstream/openclaw-<version>) and reused, so CI
 * downloads it once (≈ 830 MB, 1 min).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { ensureOpenClaw as ensure, NODE24_VERSION as INSTALLED_NODE24, type OpenClawInstall } from '../../integrations/openclaw/index.ts';

export { OPENCLAW_VERSION, type OpenClawInstall } from '../../integrations/openclaw/index.ts';

// .ci/run reads this line for the Node 24 it tests under; the typecheck holds it equal to the installer's.
export const NODE24_VERSION = '24.22.3';
const _sameNode24: typeof INSTALLED_NODE24 = NODE24_VERSION;

const run = promisify(execFile);

/** Installs (once) and returns OpenClaw and a Node it runs under: in $TURNSTREAM_OPENCLAW_CACHE where set. */
export const ensureOpenClaw = (): Promise<OpenClawInstall> => ensure({ dir: process.env.TURNSTREAM_OPENCLAW_CACHE || undefined });

/** An isolated OpenClaw: its own HOME and state directory. */
export interface OpenClawEnv {
  install: OpenClawInstall;
  home: string;
  stateDir: string;
}

function envOf(oc: OpenClawEnv): NodeJS.ProcessEnv {
  return {
    ...process.env,
    HOME: oc.home,
    OPENCLAW_STATE_DIR: oc.stateDir,
    OPENCLAW_DISABLE_BONJOUR: '1',
    OPENCLAW_NO_AUTO_UPDATE: '1',
    NO_COLOR: '1',
    PATH: `${dirname(oc.install.node)}:${process.env.PATH ?? ''}`,
  };
}

/** Runs one `openclaw …` command to its end; rejects with its output when it fails. */
export async function openclaw(oc: OpenClawEnv, args: string[], timeoutMs = 240_000): Promise<{ stdout: string; stderr: string }> {
  try {
    return await run(oc.install.node, [oc.install.cli, ...args], { env: envOf(oc), timeout: timeoutMs, maxBuffer: 64 << 20 });
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string };
    throw new Error(`openclaw ${args.join(' ')} failed: ${e.message}\n${(e.stderr ?? '').slice(-3000)}\n${(e.stdout ?? '').slice(-3000)}`);
  }
}

/** `openclaw gateway run` in the background; resolves once it listens. */
export async function startOpenClawGateway(
  oc: OpenClawEnv,
  timeoutMs = 180_000,
): Promise<{ child: ChildProcess; stop: () => Promise<void> }> {
  const child = spawn(oc.install.node, [oc.install.cli, 'gateway', 'run'], { env: envOf(oc), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(killer);
  };
  await new Promise<void>((ok, fail) => {
    const timer = setTimeout(
      () => fail(new Error(`the OpenClaw gateway did not start within ${timeoutMs} ms:\n${out.slice(-3000)}`)),
      timeoutMs,
    );
    const onData = (d: Buffer): void => {
      out = (out + d.toString()).slice(-20_000);
      if (/http server listening/.test(out)) {
        clearTimeout(timer);
        ok();
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`the OpenClaw gateway exited with ${code}:\n${out.slice(-3000)}`));
    });
  }).catch(async (err: unknown) => {
    await stop();
    throw err;
  });
  return { child, stop };
}

/**
 * The real OpenClaw agent for tests: npm `openclaw` at a pinned version, run under Node 24 (its
 * engines need ≥ 24.16; npm `node-<platform>-<arch>` provides one where this Node is older).
 * Installed once into a cache folder ($TURNSTREAM_OPENCLAW_CACHE, else
 * ~/.cache/turnstream/openclaw-<version>) and reused, so CI downloads it once (≈ 830 MB, 1 min).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

export const OPENCLAW_VERSION = '2026.9.6';
export const NODE24_VERSION = '24.22.3';

const run = promisify(execFile);

export interface OpenClawInstall {
  /** The Node binary OpenClaw runs under. */
  node: string;
  /** openclaw.mjs. */
  cli: string;
}

const nodeIsRecentEnough = (): boolean => {
  const [major, minor] = process.versions.node.split('.').map(Number);
  return (major === 24 && minor >= 16) || (major === 26 && minor >= 1) || major > 26;
};

/** Installs (once) and returns OpenClaw and a Node it runs under. */
export async function ensureOpenClaw(): Promise<OpenClawInstall> {
  const ownNode = nodeIsRecentEnough();
  const nodePkg = `node-${process.platform}-${process.arch}`;
  const dir = process.env.TURNSTREAM_OPENCLAW_CACHE || join(homedir(), '.cache', 'turnstream', `openclaw-${OPENCLAW_VERSION}`);
  const install: OpenClawInstall = {
    node: ownNode ? process.execPath : join(dir, 'node_modules', nodePkg, 'bin', 'node'),
    cli: join(dir, 'node_modules', 'openclaw', 'openclaw.mjs'),
  };
  if (existsSync(join(dir, '.ready')) && existsSync(install.node)) return install;
  // Install beside, then rename into place: an interrupted install never looks complete.
  const tmp = `${dir}.tmp-${process.pid}`;
  await rm(tmp, { recursive: true, force: true });
  await mkdir(tmp, { recursive: true });
  await writeFile(join(tmp, 'package.json'), JSON.stringify({ name: 'turnstream-openclaw-cache', private: true }));
  const pkgs = [`openclaw@${OPENCLAW_VERSION}`, ...(ownNode ? [] : [`${nodePkg}@${NODE24_VERSION}`])];
  // --ignore-scripts: native add-ons would be built for this Node, not the one OpenClaw runs under.
  await run('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error', ...pkgs], {
    cwd: tmp,
    maxBuffer: 16 << 20,
  });
  await writeFile(join(tmp, '.ready'), `${pkgs.join(' ')}\n`);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dirname(dir), { recursive: true });
  await rename(tmp, dir);
  return install;
}

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

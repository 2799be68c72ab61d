/**
 * The real OpenClaw agent: npm `openclaw` at a pinned version, run under Node 24 (its engines
 * need ≥ 24.16; npm `node-<platform>-<arch>` provides one where this Node is older). Installed
 * once into a cache folder and reused, so a machine downloads it once (≈ 830 MB, 1 min).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

export const OPENCLAW_VERSION = '2026.9.6';
export const NODE24_VERSION = '24.22.3';

const run = promisify(execFile);

/** Where OpenClaw is installed. */
export interface OpenClawInstall {
  /** The Node binary OpenClaw runs under. */
  node: string;
  /** openclaw.mjs. */
  cli: string;
  /** The install's folder (node_modules inside). */
  dir: string;
}

/** Options of {@link ensureOpenClaw}. */
export interface EnsureOpenClawOptions {
  /** The install's folder. @default {@link defaultOpenClawDir} */
  dir?: string;
}

/**
 * The default install folder: ~/.cache/turnstream/openclaw-<OPENCLAW_VERSION>, but as root
 * /var/cache/turnstream/openclaw-<OPENCLAW_VERSION>: a root process runs gym sandboxes as an
 * unprivileged user, who cannot enter /root.
 */
export const defaultOpenClawDir = (): string =>
  join(process.getuid?.() === 0 ? '/var/cache' : join(homedir(), '.cache'), 'turnstream', `openclaw-${OPENCLAW_VERSION}`);

const nodeIsRecentEnough = (): boolean => {
  const [major, minor] = process.versions.node.split('.').map(Number);
  return (major === 24 && minor >= 16) || (major === 26 && minor >= 1) || major > 26;
};

/** Installs (once) and returns OpenClaw and a Node it runs under. */
export async function ensureOpenClaw(options: EnsureOpenClawOptions = {}): Promise<OpenClawInstall> {
  const ownNode = nodeIsRecentEnough();
  const nodePkg = `node-${process.platform}-${process.arch}`;
  const dir = options.dir || defaultOpenClawDir();
  const install: OpenClawInstall = {
    node: ownNode ? process.execPath : join(dir, 'node_modules', nodePkg, 'bin', 'node'),
    cli: join(dir, 'node_modules', 'openclaw', 'openclaw.mjs'),
    dir,
  };
  if (existsSync(join(dir, '.ready')) && existsSync(install.node)) {
    await completeLifecycle(install);
    return install;
  }
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
  await completeLifecycle(install);
  return install;
}

/**
 * Installed without scripts, OpenClaw finishes its package lifecycle on its first run, writing
 * into its own package; a first run here does it, so that the install can then be used read-only
 * (mounted into a gym sandbox).
 */
async function completeLifecycle(install: OpenClawInstall): Promise<void> {
  if (!existsSync(join(dirname(install.cli), '.openclaw-lifecycle-pending'))) return;
  await run(install.node, [install.cli, '--version'], {
    env: { ...process.env, OPENCLAW_NO_AUTO_UPDATE: '1', NO_COLOR: '1' },
    timeout: 300_000,
    maxBuffer: 16 << 20,
  });
}

/**
 * `turnstream doctor [--json] [--no-install] [--fresh]`: what this machine gives turnstream, and
 * why: the Node version, the tfjs backend a training service gets (native TensorFlow, built on
 * first use, or the fallback with the reason and the fix), the CUDA device, the native build in
 * the cache, llama.cpp's runtime, the gym's sandbox with how its caps are kept (a cgroup per
 * rollout, v2 or v1, or per-process limits only, and why), and how the services reach Kafka, the
 * registry and ClickHouse (a password shows as set, and from which setting, never as itself). One
 * JSON object with --json.
 *
 * Loading tfjs and native TensorFlow for the backend check and node-llama-cpp for its runtime
 * takes seconds, so those checks are kept in `<home>/doctor.json` with a fingerprint of what they
 * depend on ({@link probeInputs}: Node, the packages, the native builds, the GPU, the system's
 * libraries, the settings) and read back while it is unchanged and under a day old; `--fresh`
 * checks again. The sandbox is tried every time.
 */
import type { Command } from 'commander';
import { existsSync, lstatSync, readFileSync, readdirSync, readlinkSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { BackendStatus } from '../../policy/index.ts';
import type { SandboxReport } from '../../gym/index.ts';
// The sandbox probe and its defaults alone: gym/index.ts loads the whole gym (doctor starts in under a second).
import { detectSandbox } from '../../gym/sandbox/detect-sandbox.ts';
import { DEFAULT_CAPS, DEFAULT_LIMITS } from '../../gym/sandbox/sandbox.ts';
import { cachedProbe } from '../cached-probe.ts';
import { loadConfig, type TurnstreamConfig } from '../config.ts';
import { connectionReport, type ConnectionReport } from '../connection-settings.ts';

/** The Node.js release lines the project is tested on. */
export const TESTED_NODE_MAJORS = [20, 22, 24] as const;

/** How long a kept check is trusted at most, whatever its fingerprint says. */
export const DOCTOR_CACHE_MAX_AGE_MS = 24 * 3600_000;

/** The checks that are kept: what policy/ reports (loading tfjs and node-llama-cpp). */
export interface BackendChecks {
  tfjs: BackendStatus | { error: string };
  native: { dir: string; cpuBuild: boolean; gpuBuild: boolean };
  cuda: { present: boolean; detail: string };
  llamaCpp: { backend: string } | { error: string };
}

export interface DoctorReport extends BackendChecks {
  node: { version: string; tested: boolean };
  /** The gym's sandbox (Linux namespaces): which kind, and why not where none; `caps`: how each rollout's memory and processes are capped. */
  sandbox: SandboxReport | { error: string };
  /** How the services reach Kafka, the registry and ClickHouse (the settings, not a connection test). */
  connections: Record<'kafka' | 'registry' | 'clickhouse', ConnectionReport>;
  /** Where tfjs, native, cuda and llamaCpp come from: checked now, or kept from an earlier run with nothing they depend on changed. */
  checks: { cached: boolean; checkedAt: string; file: string; notKept?: string };
}

/** tfjs's backend (with its known-result check) and llama.cpp's runtime, checked now. */
async function checkBackends(config: TurnstreamConfig, install: boolean): Promise<BackendChecks> {
  const policy = await import('../../policy/index.ts');
  policy.configureBackend({ preferred: config.tfjs.backend, native: { dir: config.tfjs.nativeDir, gpu: config.tfjs.gpu } });
  const progress = install ? (await import('./model.ts')).progressReporter(process.stderr) : null;
  let tfjs: BackendChecks['tfjs'];
  try {
    tfjs = await policy.selectBackendStatus(undefined, { native: { install, onProgress: progress?.onProgress } });
  } catch (err) {
    tfjs = { error: (err as Error).message };
  } finally {
    progress?.stop();
  }
  let llamaCpp: BackendChecks['llamaCpp'];
  try {
    llamaCpp = { backend: policy.llamaBackendName(await policy.llamaRuntime({ gpu: config.llama.gpu === 'off' ? false : 'auto' })) };
  } catch (err) {
    llamaCpp = { error: (err as Error).message };
  }
  return {
    tfjs,
    native: {
      dir: config.tfjs.nativeDir,
      cpuBuild: policy.nativeBuildReady(config.tfjs.nativeDir, policy.NATIVE_DISTS.cpu),
      gpuBuild: policy.nativeBuildReady(config.tfjs.nativeDir, policy.NATIVE_DISTS.gpu),
    },
    cuda: policy.detectCudaDevice(),
    llamaCpp,
  };
}

const req = createRequire(import.meta.url);

/** An installed package's folder, where Node would find it from here. */
function packageDir(name: string): string | undefined {
  for (const dir of req.resolve.paths(name) ?? []) if (existsSync(join(dir, name, 'package.json'))) return join(dir, name);
  return undefined;
}

const mtime = (p: string): number | null => {
  try {
    return lstatSync(p).mtimeMs;
  } catch {
    return null;
  }
};

/** A folder's entries and their times (a build added, replaced or removed), or null where there is none. */
function listing(dir: string, deeper: (name: string) => string[] = () => []): Record<string, unknown> | null {
  try {
    return Object.fromEntries(
      readdirSync(dir).map((n) => [n, [mtime(join(dir, n)), ...deeper(n).map((f) => mtime(join(dir, n, f)))]] as const),
    );
  } catch {
    return null;
  }
}

const text = (p: string): string | null => {
  try {
    return readFileSync(p, 'utf8');
  } catch {
    return null;
  }
};

/**
 * What the kept checks depend on: Node and the machine (CPU features decide what a native build
 * runs), the settings, the versions and places of tfjs, tfjs-node and node-llama-cpp with its
 * prebuilt binaries, tfjs-node's links to the native build, the builds in the native cache,
 * node-llama-cpp's local builds, the NVIDIA driver and devices, and the system's shared libraries
 * (ld.so.cache changes when CUDA or Vulkan libraries are installed).
 */
export function probeInputs(config: TurnstreamConfig, install: boolean): Record<string, unknown> {
  const packages: Record<string, unknown> = {};
  const llamaDir = packageDir('node-llama-cpp');
  const prebuilt = llamaDir ? listing(join(llamaDir, '..', '@node-llama-cpp')) : null;
  const names = [
    '@tensorflow/tfjs',
    '@tensorflow/tfjs-backend-wasm',
    '@tensorflow/tfjs-node',
    '@tensorflow/tfjs-node-gpu',
    'node-llama-cpp',
    ...Object.keys(prebuilt ?? {}).map((n) => `@node-llama-cpp/${n}`),
  ];
  for (const name of names) {
    const dir = packageDir(name);
    if (!dir) {
      packages[name] = null;
      continue;
    }
    const links = ['deps', 'lib'].map((l) => {
      try {
        return readlinkSync(join(dir, l));
      } catch {
        return mtime(join(dir, l));
      }
    });
    packages[name] = { dir, version: (JSON.parse(text(join(dir, 'package.json')) ?? '{}') as { version?: string }).version, links };
  }
  const cpu = (text('/proc/cpuinfo') ?? '').split('\n');
  return {
    format: 1,
    node: `${process.version} ${process.platform} ${process.arch}`,
    cpu: ['model name', 'flags'].map((k) => cpu.find((l) => l.startsWith(k)) ?? ''),
    settings: { backend: config.tfjs.backend, gpu: config.tfjs.gpu, nativeDir: config.tfjs.nativeDir, llamaGpu: config.llama.gpu, install },
    packages,
    nativeBuilds: listing(config.tfjs.nativeDir, () => ['ready.json']),
    llamaBuilds: llamaDir ? listing(join(llamaDir, 'llama', 'localBuilds')) : null,
    nvidia: { gpus: listing('/proc/driver/nvidia/gpus'), device: existsSync('/dev/nvidia0'), driver: text('/proc/driver/nvidia/version') },
    libraries: (() => {
      try {
        return statSync('/etc/ld.so.cache').mtimeMs;
      } catch {
        return null;
      }
    })(),
  };
}

export async function doctorReport(opts: { install: boolean; fresh?: boolean }): Promise<DoctorReport> {
  const config = loadConfig();
  const major = Number(process.versions.node.split('.')[0]);
  const [checks, sandbox] = await Promise.all([
    cachedProbe({
      file: join(config.home, 'doctor.json'),
      inputs: probeInputs(config, opts.install),
      maxAgeMs: DOCTOR_CACHE_MAX_AGE_MS,
      fresh: opts.fresh,
      run: () => checkBackends(config, opts.install),
      // A check that failed (or a native build that could not be had) may pass next time: not kept.
      keep: (c) => !('error' in c.tfjs) && !('error' in c.llamaCpp) && !(opts.install && c.tfjs.fallback),
    }),
    detectSandbox().catch((err: Error) => ({ error: err.message })),
  ]);
  return {
    node: { version: process.version, tested: (TESTED_NODE_MAJORS as readonly number[]).includes(major) },
    ...checks.value,
    sandbox,
    connections: connectionReport(config),
    checks: {
      cached: checks.cached,
      checkedAt: checks.checkedAt,
      file: checks.file,
      ...(checks.notKept ? { notKept: checks.notKept } : {}),
    },
  };
}

function ago(iso: string): string {
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  return s < 90 ? `${Math.round(s)} s` : s < 5400 ? `${Math.round(s / 60)} min` : `${(s / 3600).toFixed(1)} h`;
}

function print(r: DoctorReport): void {
  const say = (s: string) => process.stdout.write(`${s}\n`);
  say(`node        ${r.node.version}${r.node.tested ? '' : `  (not a tested release line: ${TESTED_NODE_MAJORS.join(', ')})`}`);
  if ('error' in r.tfjs) say(`tfjs        no backend: ${r.tfjs.error}`);
  else {
    say(`tfjs        ${r.tfjs.backend}: ${r.tfjs.reason}`);
    if (r.tfjs.fallback) say(`            not native because: ${r.tfjs.fallback}`);
    say(`            known-result check: ${r.tfjs.check}`);
  }
  say(`native      ${r.native.dir}  (cpu build: ${r.native.cpuBuild ? 'yes' : 'no'}, gpu build: ${r.native.gpuBuild ? 'yes' : 'no'})`);
  say(`cuda        ${r.cuda.present ? 'present' : 'none'}: ${r.cuda.detail}`);
  say(`llama.cpp   ${'error' in r.llamaCpp ? r.llamaCpp.error : r.llamaCpp.backend}`);
  const sb = r.sandbox;
  if ('error' in sb) say(`sandbox     ${sb.error}`);
  else if (sb.kind)
    say(
      `sandbox     ${sb.kind}${sb.runAs ? ` (as uid ${sb.runAs.uid})` : ''}; python3 ${sb.python.available ? sb.python.version : `no: ${sb.python.reason}`}`,
    );
  else say(`sandbox     none: ${sb.backends.map((b) => `${b.kind}: ${b.reason}`).join('; ')}${sb.fix ? `. Fix: ${sb.fix}` : ''}`);
  if (!('error' in sb)) say(`limits      ${capsLine(sb.caps)}`);
  for (const [name, c] of Object.entries(r.connections)) {
    say(`${name.padEnd(12)}${c.endpoint} ${c.protocol}${c.user ? `, user ${c.user}` : ''}, password ${c.password}, trusts ${c.trust}`);
  }
  if (r.checks.cached)
    say(
      `checked     ${ago(r.checks.checkedAt)} ago: tfjs to llama.cpp, kept in ${r.checks.file} (nothing they depend on changed; --fresh checks again)`,
    );
}

const gib = (bytes: number): string => `${+(bytes / 1024 ** 3).toFixed(2)} GiB`;

/** How a rollout's memory and processes are capped, in one line (pure). */
export function capsLine(caps: SandboxReport['caps']): string {
  const perProcess = `${gib(DEFAULT_LIMITS.memoryBytes)} of address space and ${DEFAULT_LIMITS.processes} processes per command`;
  if (caps.by === 'per-process') return `per process only (${perProcess}): ${caps.detail}`;
  return `per rollout by cgroup ${caps.by.slice('cgroup-'.length)}: ${gib(DEFAULT_CAPS.memoryBytes)} and ${DEFAULT_CAPS.processes} processes for all its processes together (${caps.detail}); inside it ${perProcess}`;
}

export function register(program: Command): void {
  program
    .command('doctor')
    .description(
      'what this machine gives turnstream: Node, the tfjs backend and why, the native TensorFlow build, CUDA, llama.cpp, the sandbox',
    )
    .option('--json', 'print one JSON object')
    .option('--no-install', 'do not fetch or build native TensorFlow; report what is in the cache')
    .option(
      '--fresh',
      'check the tfjs backend and llama.cpp again instead of reading the last check (kept while nothing it depends on changes)',
    )
    .action(async (flags: { json?: boolean; install: boolean; fresh?: boolean }) => {
      const report = await doctorReport({ install: flags.install, fresh: flags.fresh });
      if (flags.json) process.stdout.write(JSON.stringify(report) + '\n');
      else print(report);
      process.exit(0);
    });
}

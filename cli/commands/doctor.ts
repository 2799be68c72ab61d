/**
 * `turnstream doctor [--json] [--no-install]`: what this machine gives turnstream, and why: the
 * Node version, the tfjs backend a training service gets (native TensorFlow, built on first use,
 * or the fallback with the reason and the fix), the CUDA device, the native build in the cache,
 * llama.cpp's runtime, the gym's sandbox with how its caps are kept (a cgroup per rollout,
 * v2 or v1, or per-process limits only, and why), and how the services reach Kafka, the registry
 * and ClickHouse (a password shows as set, and from which setting, never as itself). One JSON
 * object with --json.
 */
import type { Command } from 'commander';
import {
  detectCudaDevice,
  llamaBackendName,
  llamaRuntime,
  nativeBuildReady,
  NATIVE_DISTS,
  selectBackendStatus,
  type BackendStatus,
} from '../../policy/index.ts';
import { DEFAULT_CAPS, DEFAULT_LIMITS, detectSandbox, type SandboxReport } from '../../gym/index.ts';
import { loadConfig } from '../config.ts';
import { connectionReport, type ConnectionReport } from '../connection-settings.ts';
import { progressReporter } from './model.ts';

/** The Node.js release lines the project is tested on. */
export const TESTED_NODE_MAJORS = [20, 22, 24] as const;

export interface DoctorReport {
  node: { version: string; tested: boolean };
  tfjs: BackendStatus | { error: string };
  native: { dir: string; cpuBuild: boolean; gpuBuild: boolean };
  cuda: { present: boolean; detail: string };
  llamaCpp: { backend: string } | { error: string };
  /** The gym's sandbox (Linux namespaces): which kind, and why not where none; `caps`: how each rollout's memory and processes are capped. */
  sandbox: SandboxReport | { error: string };
  /** How the services reach Kafka, the registry and ClickHouse (the settings, not a connection test). */
  connections: Record<'kafka' | 'registry' | 'clickhouse', ConnectionReport>;
}

export async function doctorReport(opts: { install: boolean }): Promise<DoctorReport> {
  const config = loadConfig();
  const major = Number(process.versions.node.split('.')[0]);
  const progress = opts.install ? progressReporter(process.stderr) : null;
  let tfjs: DoctorReport['tfjs'];
  try {
    tfjs = await selectBackendStatus(undefined, { native: { install: opts.install, onProgress: progress?.onProgress } });
  } catch (err) {
    tfjs = { error: (err as Error).message };
  } finally {
    progress?.stop();
  }
  let llamaCpp: DoctorReport['llamaCpp'];
  try {
    llamaCpp = { backend: llamaBackendName(await llamaRuntime({ gpu: config.llama.gpu === 'off' ? false : 'auto' })) };
  } catch (err) {
    llamaCpp = { error: (err as Error).message };
  }
  const sandbox = await detectSandbox().catch((err: Error) => ({ error: err.message }));
  return {
    node: { version: process.version, tested: (TESTED_NODE_MAJORS as readonly number[]).includes(major) },
    tfjs,
    native: {
      dir: config.tfjs.nativeDir,
      cpuBuild: nativeBuildReady(config.tfjs.nativeDir, NATIVE_DISTS.cpu),
      gpuBuild: nativeBuildReady(config.tfjs.nativeDir, NATIVE_DISTS.gpu),
    },
    cuda: detectCudaDevice(),
    llamaCpp,
    sandbox,
    connections: connectionReport(config),
  };
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
    .action(async (flags: { json?: boolean; install: boolean }) => {
      const report = await doctorReport({ install: flags.install });
      if (flags.json) process.stdout.write(JSON.stringify(report) + '\n');
      else print(report);
      process.exit(0);
    });
}

// run alone: the kept checks' fingerprint covers the machine's native builds and the installed
// packages' links, which another test file may set up while this one runs (test/support/run-test-files.ts).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { capsLine, type DoctorReport } from '../../../../cli/commands/doctor.ts';
import { suiteTempDir } from '../../../support/temp-dir.ts';

const BIN = new URL('../../../../bin/turnstream.js', import.meta.url).pathname;
const RECORD_LOADS = new URL('../../../support/record-loads.mjs', import.meta.url).pathname;

describe('turnstream doctor', () => {
  const dir = suiteTempDir('ts-doctor-');

  const doctor = async (
    args: string[],
    env: Record<string, string>,
    nodeArgs: string[] = [],
  ): Promise<{ report: DoctorReport; stdout: string }> => {
    const { stdout } = await promisify(execFile)(process.execPath, [...nodeArgs, BIN, 'doctor', ...args], {
      env: { ...process.env, TURNSTREAM_HOME: dir(), LOG_LEVEL: 'silent', ...env },
    });
    return { report: args.includes('--json') ? (JSON.parse(stdout) as DoctorReport) : (undefined as never), stdout };
  };

  it('--json: one object; the backend asked for, checked, and why', async () => {
    const { report } = await doctor(['--json', '--no-install'], { TFJS_BACKEND: 'wasm' });
    assert.equal(report.node.version, process.version);
    assert.equal(report.node.tested, true);
    assert.ok(!('error' in report.tfjs));
    if ('error' in report.tfjs) return;
    assert.equal(report.tfjs.backend, 'wasm');
    assert.match(report.tfjs.reason, /asked for/);
    assert.match(report.tfjs.check, /largest relative error/);
    assert.equal(report.llamaCpp && 'backend' in report.llamaCpp ? report.llamaCpp.backend : '', 'cpu');
    assert.ok(!('error' in report.sandbox) && report.sandbox.kind, 'this machine makes sandboxes (bubblewrap or unshare)');
    if ('error' in report.sandbox) return;
    assert.ok(['cgroup-v2', 'cgroup-v1', 'per-process'].includes(report.sandbox.caps.by), 'how a rollout’s caps are kept');
    assert.match(report.sandbox.caps.detail, /\S/, 'and where, or why per process only');
  });

  it('without a native build (and --no-install) it says why the trainer would run on wasm', async () => {
    const empty = join(dir(), 'no-native');
    const { report } = await doctor(['--json', '--no-install'], { TURNSTREAM_NATIVE_DIR: empty });
    assert.ok(!('error' in report.tfjs));
    if ('error' in report.tfjs) return;
    assert.equal(report.tfjs.backend, 'wasm');
    assert.match(report.tfjs.fallback ?? '', /no cpu build in .*no-native \(install is off\)/);
    assert.deepEqual(report.native, { dir: empty, cpuBuild: false, gpuBuild: false });
  });

  it('for people: a line each, the fallback named', async () => {
    const { stdout } = await doctor(['--no-install'], { TURNSTREAM_NATIVE_DIR: join(dir(), 'no-native') });
    assert.match(stdout, /^node {8}v\d+/m);
    assert.match(stdout, /^tfjs {8}wasm: /m);
    assert.match(stdout, /not native because: tensorflow: no cpu build/);
    assert.match(stdout, /^sandbox {5}(bwrap|unshare)/m);
    assert.match(
      stdout,
      /^limits {6}(per rollout by cgroup v[12]: 1 GiB and 64 processes for all its processes together \(.+\); inside it|per process only \()/m,
    );
  });

  it('names how a rollout’s caps are kept: a cgroup and where, or per process only and why', () => {
    assert.equal(
      capsLine({ by: 'cgroup-v1', detail: 'a cgroup per sandbox in /sys/fs/cgroup/memory/x and /sys/fs/cgroup/pids' }),
      'per rollout by cgroup v1: 1 GiB and 64 processes for all its processes together (a cgroup per sandbox in /sys/fs/cgroup/memory/x and /sys/fs/cgroup/pids); inside it 1 GiB of address space and 64 processes per command',
    );
    assert.equal(
      capsLine({ by: 'per-process', detail: 'no cgroup v2 hierarchy is mounted; no cgroup v1 memory hierarchy is mounted' }),
      'per process only (1 GiB of address space and 64 processes per command): no cgroup v2 hierarchy is mounted; no cgroup v1 memory hierarchy is mounted',
    );
  });

  it('keeps the tfjs and llama.cpp checks: the next run reads them without loading tfjs or node-llama-cpp (nor pino, prom-client, kafkajs or the registry client), until something they depend on changes', async () => {
    const env = { TFJS_BACKEND: 'wasm' };
    const first = (await doctor(['--json', '--no-install', '--fresh'], env)).report;
    assert.equal(first.checks.cached, false);
    assert.equal(first.checks.file, join(dir(), 'doctor.json'));
    const record = join(dir(), 'loads');
    const again = (await doctor(['--json', '--no-install'], { ...env, RECORD_LOADS_FILE: record }, ['--import', RECORD_LOADS])).report;
    assert.equal(again.checks.cached, true);
    assert.equal(again.checks.checkedAt, first.checks.checkedAt);
    for (const k of ['tfjs', 'native', 'cuda', 'llamaCpp'] as const) assert.deepEqual(again[k], first[k], k);
    assert.equal(again.node.version, process.version);
    assert.ok(!('error' in again.sandbox) && again.sandbox.kind, 'the sandbox is tried every time');
    const loaded = readFileSync(record, 'utf8').split('\n');
    assert.deepEqual(
      loaded.filter(
        (u) => /node_modules\/(@tensorflow|node-llama-cpp|pino|prom-client|kafkajs|@confluentinc)\//.test(u) || /\/policy\//.test(u),
      ),
      [],
      'no tfjs, node-llama-cpp or policy/ loaded (nor a logger, metrics, kafkajs or the registry client, which doctor does not use)',
    );
    const { stdout } = await doctor(['--no-install'], env);
    assert.match(
      stdout,
      /^checked {5}\d+ s ago: tfjs to llama.cpp, kept in .*doctor\.json \(nothing they depend on changed; --fresh checks again\)$/m,
    );

    // A setting they depend on, and --fresh, check again.
    assert.equal((await doctor(['--json', '--no-install'], { ...env, TFJS_GPU: 'off' })).report.checks.cached, false);
    assert.equal((await doctor(['--json', '--no-install', '--fresh'], env)).report.checks.cached, false);
  });
});

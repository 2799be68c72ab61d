// `turnstream bench cli [--json] [--runs 7] [--bin PATH]`: how fast the command starts. Wall time
// (spawn to exit), peak RSS and CPU time of `turnstream --help`, `turnstream doctor` and
// `turnstream up --help`, each in a fresh process, against `node -e 0` started the same way in the same rounds;
// medians over the rounds, after one warm-up round (whose doctor, which may have had no kept
// checks, is reported apart). `--bin` measures another checkout's command (e.g. main's) the same way.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { resolveOptions, type BenchArgs, type BenchOptions, type BenchResult } from './options.ts';
import { median } from './support.ts';

export const description =
  'start-up of the turnstream command: wall time, peak RSS and CPU time of --help, doctor and up --help, against node -e 0 in the same rounds';

export const options: BenchOptions = {
  runs: { default: '7', min: 3, help: 'measured rounds (after one warm-up round); medians are reported' },
  bin: { type: 'string', default: 'bin/turnstream.js', help: "the command to measure, relative to this package (or another checkout's)" },
};

/** The targets of issue #45, in seconds and MB. */
export const TARGETS = { help_s: 0.3, doctor_s: 1, help_rss_mb: 80 } as const;

/** The folder holding package.json, from this file (bench/ in the sources, dist/bench/ when compiled). */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}

interface Run {
  seconds: number;
  rssMb: number;
  /** CPU time of the process itself (user + system): what a busy machine changes least. */
  cpuS: number;
}

/** One process: `node [--import probe] ...args`, its wall time, and its peak RSS and CPU time (written by the probe at exit). */
async function measure(args: string[], probe: string, dir: string, n: number): Promise<Run> {
  const usageFile = join(dir, `usage-${n}`);
  const t0 = performance.now();
  await new Promise<void>((res, rej) => {
    const child = spawn(process.execPath, ['--import', probe, ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, TURNSTREAM_BENCH_USAGE_FILE: usageFile },
    });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-2000)));
    child.on('error', rej);
    child.on('exit', (c) => (c === 0 ? res() : rej(new Error(`node ${args.join(' ')} exited ${c}: ${err.trim()}`))));
  });
  const seconds = (performance.now() - t0) / 1000;
  const usage = JSON.parse(readFileSync(usageFile, 'utf8')) as { maxRSS: number; userCPUTime: number; systemCPUTime: number };
  return { seconds, rssMb: usage.maxRSS / 1024, cpuS: (usage.userCPUTime + usage.systemCPUTime) / 1e6 };
}

const r3 = (x: number): number => Math.round(x * 1000) / 1000;

export async function run(args: BenchArgs): Promise<BenchResult & Record<string, unknown>> {
  const o = resolveOptions(options, args.options);
  const progress = args.progress;
  const runs = Number(o.runs);
  const bin = resolve(packageRoot(), o.bin);
  if (!existsSync(bin)) throw new Error(`no command at ${bin}`);
  const dir = mkdtempSync(join(tmpdir(), 'bench-cli-'));
  const probe = join(dir, 'usage-probe.mjs');
  // Peak RSS and CPU time as the kernel counts them (getrusage), written when the process exits.
  writeFileSync(
    probe,
    "import { writeFileSync } from 'node:fs';\nprocess.on('exit', () => writeFileSync(process.env.TURNSTREAM_BENCH_USAGE_FILE, JSON.stringify(process.resourceUsage())));\n",
  );
  const cases = {
    baseline: ['-e', '0'],
    help: [bin, '--help'],
    doctor: [bin, 'doctor'],
    up_help: [bin, 'up', '--help'],
  } as const;
  type Case = keyof typeof cases;
  const got: Record<Case, Run[]> = { baseline: [], help: [], doctor: [], up_help: [] };
  const load = [loadavg()[0]];
  let n = 0;
  let doctorFirst: Run | undefined;
  try {
    for (let round = 0; round <= runs; round++) {
      for (const c of Object.keys(cases) as Case[]) {
        const r = await measure([...cases[c]], probe, dir, n++);
        if (round === 0) {
          if (c === 'doctor') doctorFirst = r;
        } else got[c].push(r);
      }
      progress(
        round === 0
          ? `cli: warm-up round done (doctor ${doctorFirst!.seconds.toFixed(2)} s)`
          : `cli: round ${round}/${runs}: help ${got.help.at(-1)!.seconds.toFixed(2)} s, doctor ${got.doctor.at(-1)!.seconds.toFixed(2)} s, node -e 0 ${got.baseline.at(-1)!.seconds.toFixed(2)} s`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  load.push(loadavg()[0]);
  const med = (c: Case, k: keyof Run) => r3(median(got[c].map((r) => r[k])));
  const figures = {
    baseline_s: med('baseline', 'seconds'),
    help_s: med('help', 'seconds'),
    doctor_s: med('doctor', 'seconds'),
    up_help_s: med('up_help', 'seconds'),
    doctor_first_s: r3(doctorFirst!.seconds),
    baseline_rss_mb: med('baseline', 'rssMb'),
    help_rss_mb: med('help', 'rssMb'),
    doctor_rss_mb: med('doctor', 'rssMb'),
    up_help_rss_mb: med('up_help', 'rssMb'),
    baseline_cpu_s: med('baseline', 'cpuS'),
    help_cpu_s: med('help', 'cpuS'),
    doctor_cpu_s: med('doctor', 'cpuS'),
    up_help_cpu_s: med('up_help', 'cpuS'),
  };
  return {
    bench: 'cli',
    bin,
    node: process.version,
    runs,
    ...figures,
    targets: TARGETS,
    met: {
      help_s: figures.help_s <= TARGETS.help_s,
      doctor_s: figures.doctor_s <= TARGETS.doctor_s,
      help_rss_mb: figures.help_rss_mb <= TARGETS.help_rss_mb,
    },
    /** The machine's 1-minute load average before and after (a shared machine: how busy it was). */
    load_1m: load.map((l) => Math.round(l * 100) / 100),
    baseline: 'node -e 0, spawned the same way in the same rounds (medians)',
    ratio: r3(figures.help_s / figures.baseline_s),
  };
}

/**
 * What every benchmark in bench/ declares, and how its options are read. A benchmark module
 * exports:
 *
 * - `description`: one line, what it measures and against what baseline;
 * - `options`: its `--name value` options (`turnstream bench NAME --help` lists them; any other
 *   option is an error);
 * - `run(args)`: measures, returns one JSON-able object with `baseline` (what the baseline in
 *   the same run is) and `ratio` (the measured figure ÷ the baseline's), and deletes every topic,
 *   consumer group and temp file it made, also when it fails (see `benchFamily` in support.ts).
 */
import { invalidInput } from '../core/index.ts';
import type { StackSettings } from '../stack/index.ts';

/** The configuration a benchmark runs on: the CLI's whole one (stack/settings.ts), so that what it builds is built as `turnstream up`'s. */
export type BenchConfig = StackSettings;

/** What every benchmark receives. */
export interface BenchArgs {
  config: BenchConfig;
  /** `--key value` options after the name, as strings: checked and with defaults when the bench declares `options`. */
  options: Record<string, string>;
  /** Progress lines (stderr), so stdout stays one JSON object. */
  progress: (line: string) => void;
}

/** What a benchmark module exports. */
export interface BenchModule {
  description: string;
  options: BenchOptions;
  run(args: BenchArgs): Promise<BenchResult>;
}

/** `--key value` / `--key=value` / a bare `--flag` (= "true") after the name; `--json` is the command's own. */
export function splitBenchArgs(rest: string[]): { options: Record<string, string>; help: boolean } {
  const options: Record<string, string> = {};
  let help = false;
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    if (a === '--help' || a === '-h') {
      help = true;
      continue;
    }
    const m = /^--([a-z0-9-]+)(?:=(.*))?$/.exec(a);
    if (!m) throw invalidInput(`unexpected argument ${JSON.stringify(a)}; options are --name value`, a);
    if (m[1] === 'json') continue;
    if (m[2] !== undefined) options[m[1]] = m[2];
    else if (rest[i + 1] !== undefined && !rest[i + 1].startsWith('--')) options[m[1]] = rest[++i];
    else options[m[1]] = 'true';
  }
  return { options, help };
}

export interface BenchOption {
  /** What it sets. */
  help: string;
  /** The value when not given, as typed on the command line. */
  default: string;
  /** `int`: a whole number ≥ `min`; `list`: comma-separated, each one of `choices`; `string`: any non-empty text. @default 'int' */
  type?: 'int' | 'list' | 'string';
  /** @default 1 */
  min?: number;
  choices?: readonly string[];
}

export type BenchOptions = Record<string, BenchOption>;

/** What every result carries (besides the bench's own figures). */
export interface BenchResult {
  /** The baseline measured in the same run. */
  baseline: string;
  /** The measured figure ÷ the baseline's (higher is better unless the bench says otherwise). */
  ratio: number;
}

/**
 * The options of one run: `given` checked against `spec`, defaults filled in. An unknown option
 * or a bad value is an input error (one line, exit 2 on the command line).
 */
export function resolveOptions(spec: BenchOptions, given: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of Object.keys(given)) {
    if (!Object.hasOwn(spec, key)) {
      const known = Object.keys(spec).map((k) => `--${k}`);
      throw invalidInput(
        `unknown option --${key}; this benchmark takes ${known.length ? known.join(', ') : 'no options'} (and --json)`,
        `--${key}`,
      );
    }
  }
  for (const [key, o] of Object.entries(spec)) {
    const v = given[key] ?? o.default;
    if ((o.type ?? 'int') === 'int') {
      const min = o.min ?? 1;
      if (!/^\d+$/.test(v) || Number(v) < min)
        throw invalidInput(`--${key} must be a whole number ≥ ${min}, got ${JSON.stringify(v)}`, `--${key}`);
    } else if (o.type === 'string') {
      if (v.trim() === '') throw invalidInput(`--${key} needs a value`, `--${key}`);
    } else if (o.choices) {
      const bad = v.split(',').filter((x) => !o.choices!.includes(x));
      if (bad.length > 0 || v === '')
        throw invalidInput(`--${key} takes a comma-separated list of ${o.choices.join(', ')}; got ${JSON.stringify(v)}`, `--${key}`);
    }
    out[key] = v;
  }
  return out;
}

/** `turnstream bench NAME --help`. */
export function benchHelp(name: string, description: string, spec: BenchOptions): string {
  const rows = Object.entries(spec).map(([k, o]) => [
    `--${k} <${(o.type ?? 'int') === 'int' ? 'n' : o.type === 'string' ? 'value' : 'list'}>`,
    `${o.help} (default ${o.default})`,
  ]);
  rows.push(['--json', 'one JSON object on stdout (progress and logs on stderr)']);
  const width = Math.max(...rows.map(([a]) => a.length));
  return [
    `Usage: turnstream bench ${name} [options]`,
    '',
    description,
    '',
    'Options:',
    ...rows.map(([a, b]) => `  ${a.padEnd(width)}  ${b}`),
    '',
  ].join('\n');
}

// The PyTorch + peft peer of turnstream's LoRA step: bench/torch-peer/peer.py runs the same step
// (one sample, the PPO-clipped loss on its response, backward, clipping, AdamW; LoRA r 8 on
// q/k/v/o) on the CPU in its own Python process, from a virtualenv that lives in
// .turnstream/torch-peer/venv apart from everything else and is installed on first use from
// bench/torch-peer/requirements.txt (every package pinned), as bench/kafka-clients is for
// `bench clients`.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ErrorCodes, TurnstreamError } from '../core/index.ts';

const PEER_DIR = fileURLToPath(new URL('./torch-peer/', import.meta.url));
const REQUIREMENTS = join(PEER_DIR, 'requirements.txt');
const PEER = join(PEER_DIR, 'peer.py');
/** In the venv: the sha256 of the requirements.txt it was installed from. */
const STAMP = 'turnstream-requirements.sha256';

/** Options of {@link ensureTorchPeer}. */
export interface EnsureTorchPeerOptions {
  /** Where the virtualenv goes: `<home>/torch-peer/venv` (TURNSTREAM_HOME, by default `.turnstream`). */
  home: string;
  /** Called with each line of the install's output (venv creation, pip). @default no progress */
  onProgress?: (line: string) => void;
}

/** Options of {@link runTorchPeer}. */
export interface RunTorchPeerOptions {
  /** The virtualenv's python, as {@link ensureTorchPeer} returns it. */
  python: string;
  /** A llama-architecture GGUF file. */
  modelPath: string;
  /** Sequence lengths to measure, each one sample of that many tokens, half of them the response. */
  tokens: number[];
  /** Timed LoRA steps (and no-grad forward passes) per size, after one warm-up of each. */
  steps: number;
  /** torch's intra-op threads. @default torch's own default (the physical cores) */
  threads?: number;
  /**
   * `gguf`: the file's weights, dequantized to fp32 by transformers; `random`: random weights of
   * the shapes in the file's header; `auto`: `gguf`, or `random` where transformers cannot load
   * the file (the result's `weights` says which). Timing does not depend on the values.
   * @default 'auto'
   */
  weights?: 'auto' | 'gguf' | 'random';
  /** The peer process is killed after this long. @default 600000 */
  timeoutMs?: number;
}

/** What peer.py reports; figures are medians over the timed steps, keyed by sequence length. */
export interface TorchPeerResult {
  /** `pytorch <ver> + peft <ver> (cpu)`. */
  name: string;
  torch: string;
  peft: string;
  transformers: string;
  /** `torch.get_num_threads()` during the run. */
  threads: number;
  /** How the weights were had: `gguf-dequantized` or `random`. */
  weights: 'gguf-dequantized' | 'random';
  /** Trainable (LoRA) parameters. */
  lora_parameters: number;
  /** Timed steps per size. */
  steps: number;
  /** Wall seconds per LoRA step. */
  lora_step_s: Record<string, number>;
  /** CPU seconds per LoRA step (all of the process's threads). */
  lora_step_cpu_s: Record<string, number>;
  /** No-grad forward pass, tokens per second (logits at the last position only). */
  forward_tokens_per_s: Record<string, number>;
  /** The peer process's peak RSS, loading included. */
  peak_rss_mb: number;
}

/** The venv's python under `home`. */
function torchPeerPython(home: string): string {
  const venv = join(home, 'torch-peer', 'venv');
  return process.platform === 'win32' ? join(venv, 'Scripts', 'python.exe') : join(venv, 'bin', 'python');
}

/** Runs an install command, each output line to `onLine`; rejects with PREREQUISITE naming the command. */
function install(command: string, args: string[], onLine: (line: string) => void, hint: string): Promise<void> {
  const shown = [command, ...args].join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let tail: string[] = [];
    const lines = (chunk: Buffer, carry: { rest: string }): void => {
      const parts = (carry.rest + chunk.toString()).split(/\r?\n/);
      carry.rest = parts.pop() ?? '';
      for (const l of parts.filter((p) => p.trim() !== '')) {
        onLine(l);
        tail = [...tail, l].slice(-15);
      }
    };
    const out = { rest: '' };
    const err = { rest: '' };
    child.stdout.on('data', (b: Buffer) => lines(b, out));
    child.stderr.on('data', (b: Buffer) => lines(b, err));
    child.once('error', (e) =>
      reject(new TurnstreamError(ErrorCodes.PREREQUISITE, `${shown} could not start (${e.message}); ${hint}`, { cause: e })),
    );
    child.once('close', (code, sig) => {
      if (code === 0) return resolve();
      const last = [...tail, out.rest, err.rest].filter((l) => l.trim() !== '').join('\n');
      reject(new TurnstreamError(ErrorCodes.PREREQUISITE, `${shown} failed (${sig ?? `exit ${code}`}); ${hint}\n${last}`));
    });
  });
}

/**
 * Makes the peer's virtualenv ready: creates it with `python3 -m venv` where it is missing and
 * installs bench/torch-peer/requirements.txt into it where it was not installed from this very
 * file (a stamp in the venv keeps the file's sha256). The first install downloads several GB
 * (PyPI's torch for Linux is the CUDA build) and takes minutes.
 * @returns the venv's python
 * @throws TurnstreamError TS_ERR_PREREQUISITE when python3, its venv module or pip fails
 */
export async function ensureTorchPeer(opts: EnsureTorchPeerOptions): Promise<string> {
  const progress = opts.onProgress ?? (() => {});
  const venv = join(opts.home, 'torch-peer', 'venv');
  const python = torchPeerPython(opts.home);
  const stamp = join(venv, STAMP);
  const sha = createHash('sha256')
    .update(await readFile(REQUIREMENTS))
    .digest('hex');
  if (existsSync(python) && existsSync(stamp) && (await readFile(stamp, 'utf8')).trim() === sha) return python;

  if (!existsSync(python)) {
    progress(`creating the torch peer's virtualenv in ${venv}`);
    await mkdir(join(venv, '..'), { recursive: true });
    await install(
      'python3',
      ['-m', 'venv', venv],
      progress,
      'install Python 3 with its venv module (Debian: apt-get install python3 python3-venv)',
    );
  }
  // An install cut short must not pass for a finished one.
  await rm(stamp, { force: true });
  progress(`installing ${REQUIREMENTS} into ${venv} (several GB the first time)`);
  const pip = ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '--progress-bar', 'off', '-r', REQUIREMENTS];
  await install(python, pip, progress, `run \`${python} ${pip.join(' ')}\` to see why (or remove ${venv} and try again)`);
  await writeFile(stamp, `${sha}\n`);
  return python;
}

const isNumberRecord = (v: unknown): v is Record<string, number> =>
  typeof v === 'object' && v !== null && Object.values(v).every((x) => typeof x === 'number');

/** The peer's JSON line, checked field by field. */
function parseResult(line: string): TorchPeerResult {
  const r = JSON.parse(line) as Record<string, unknown>;
  const strings = ['name', 'torch', 'peft', 'transformers', 'weights'] as const;
  const numbers = ['threads', 'lora_parameters', 'steps', 'peak_rss_mb'] as const;
  const records = ['lora_step_s', 'lora_step_cpu_s', 'forward_tokens_per_s'] as const;
  const bad = [
    ...strings.filter((k) => typeof r[k] !== 'string'),
    ...numbers.filter((k) => typeof r[k] !== 'number'),
    ...records.filter((k) => !isNumberRecord(r[k])),
  ];
  if (bad.length > 0)
    throw new TurnstreamError(ErrorCodes.UPSTREAM, `the torch peer's result lacks ${bad.join(', ')}: ${line}`, { retriable: false });
  return r as unknown as TorchPeerResult;
}

/**
 * Runs peer.py on a model in its own process and returns its figures.
 * @throws TurnstreamError TS_ERR_UPSTREAM with the peer's last stderr line when it fails,
 *   TS_ERR_TIMEOUT when it runs past `timeoutMs`, TS_ERR_INVALID_INPUT for bad sizes
 */
export function runTorchPeer(opts: RunTorchPeerOptions): Promise<TorchPeerResult> {
  const { python, modelPath, tokens, steps } = opts;
  if (tokens.length === 0 || tokens.some((t) => !Number.isInteger(t) || t < 4))
    return Promise.reject(
      new TurnstreamError(ErrorCodes.INVALID_INPUT, `tokens: whole numbers ≥ 4, got ${tokens.join(',')}`, { param: 'tokens' }),
    );
  if (!Number.isInteger(steps) || steps < 1)
    return Promise.reject(new TurnstreamError(ErrorCodes.INVALID_INPUT, `steps: a whole number ≥ 1, got ${steps}`, { param: 'steps' }));
  const args = [PEER, '--model', modelPath, '--tokens', tokens.join(','), '--steps', String(steps), '--weights', opts.weights ?? 'auto'];
  if (opts.threads !== undefined) args.push('--threads', String(opts.threads));
  const timeoutMs = opts.timeoutMs ?? 600_000;
  return new Promise((resolve, reject) => {
    const child = spawn(python, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let timedOut = false;
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (err = (err + b.toString()).slice(-8000)));
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(new TurnstreamError(ErrorCodes.PREREQUISITE, `the torch peer could not start (${python}): ${e.message}`, { cause: e }));
    });
    child.once('close', (code, sig) => {
      clearTimeout(timer);
      if (timedOut) return reject(new TurnstreamError(ErrorCodes.TIMEOUT, `the torch peer ran past ${timeoutMs} ms`, { retriable: false }));
      const line = out.trim().split('\n').pop() ?? '';
      if (code === 0 && line.startsWith('{')) {
        try {
          return resolve(parseResult(line));
        } catch (e) {
          return reject(
            e instanceof TurnstreamError
              ? e
              : new TurnstreamError(ErrorCodes.UPSTREAM, `the torch peer's result is not JSON: ${line}`, { cause: e, retriable: false }),
          );
        }
      }
      const last =
        err
          .split(/\r?\n|\r/)
          .filter((l) => l.trim() !== '')
          .pop() ?? '(no output)';
      reject(new TurnstreamError(ErrorCodes.UPSTREAM, `the torch peer failed (${sig ?? `exit ${code}`}): ${last}`, { retriable: false }));
    });
  });
}

/**
 * Evaluated prompts kept on disk: llama.cpp sequence states (the KV cache of a token run and
 * the tokens themselves), so that a long prefix evaluated once costs a file read the next time,
 * even after its sequence went to another conversation. An 8k-token state of SmolLM2-135M is
 * 190 MB and loads in about 0.15 s; evaluating it again takes a minute on two CPU cores.
 *
 * A state is valid only for the weights that computed it: each is filed under the KV key of the
 * version that evaluated it (see `kvKeyOf`), and only a context of the same key loads it. Within
 * a key, a state is used for the longest run of tokens it shares with a prompt; the tokens after
 * that run are erased from the sequence before the prompt's own are evaluated, so nothing of
 * another conversation stays in a sequence but the tokens both share.
 *
 * A state is written when a sequence is about to discard what it evaluated (it is given to a
 * prompt that shares less), not after every request. The least recently used states go beyond
 * `maxBytes`. The folder belongs to this process: emptied when opened and removed when closed.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rm, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LlamaContextSequence } from 'node-llama-cpp';
import type { Logger } from '../core/index.ts';

export interface KvStatesOptions {
  /** The folder of the state files; emptied on open, removed on close. */
  dir: string;
  /** Bytes of state files kept; the least recently used go beyond it. @default 1 GiB */
  maxBytes?: number;
  logger?: Pick<Logger, 'warn'>;
}

interface Entry {
  key: string;
  tokens: readonly number[];
  file: string;
  bytes: number;
  lastUsed: number;
}

/** What a state offers a prompt: the tokens both share from the start. */
export interface KvMatch {
  readonly tokens: number;
  readonly entry: object;
}

export class KvStates {
  private entries: Entry[] = [];
  private bytes = 0;
  private next = 0;
  private clock = 0;
  /** States written, loaded, and writes that failed (counted, logged, and the request goes on without). */
  readonly stats = { saved: 0, loaded: 0, evicted: 0, failed: 0 };

  private constructor(private readonly o: KvStatesOptions) {}

  static async open(o: KvStatesOptions): Promise<KvStates> {
    await rm(o.dir, { recursive: true, force: true });
    await mkdir(o.dir, { recursive: true });
    return new KvStates(o);
  }

  get maxBytes(): number {
    return this.o.maxBytes ?? 2 ** 30;
  }

  /** Bytes of the states on disk. */
  get size(): number {
    return this.bytes;
  }

  get count(): number {
    return this.entries.length;
  }

  /** The state of `key` sharing the longest run of tokens with `prompt` from its start. */
  best(key: string, prompt: readonly number[]): KvMatch | null {
    let best: Entry | null = null;
    let n = 0;
    for (const e of this.entries) {
      if (e.key !== key) continue;
      const m = commonPrefix(e.tokens, prompt);
      if (m > n) [best, n] = [e, m];
    }
    return best ? { tokens: n, entry: best } : null;
  }

  /** Whether a state of `key` already holds `tokens` (or more, starting with them). */
  covers(key: string, tokens: readonly number[]): boolean {
    return this.entries.some((e) => e.key === key && e.tokens.length >= tokens.length && commonPrefix(e.tokens, tokens) === tokens.length);
  }

  /**
   * Writes what `seq` holds under `key`. States it makes redundant (their tokens a prefix of its
   * own) are dropped. A failed write is logged and counted; the caller goes on without it.
   */
  async save(key: string, seq: LlamaContextSequence): Promise<void> {
    const tokens = [...seq.contextTokens] as number[];
    if (tokens.length === 0) return;
    const file = join(this.o.dir, `${this.next++}.state`);
    try {
      const { fileSize } = await seq.saveStateToFile(file);
      if (fileSize > this.maxBytes) {
        await unlink(file);
        return;
      }
      for (const e of this.entries.filter((e) => e.key === key && commonPrefix(e.tokens, tokens) === e.tokens.length)) await this.drop(e);
      this.entries.push({ key, tokens, file, bytes: fileSize, lastUsed: ++this.clock });
      this.bytes += fileSize;
      this.stats.saved++;
      while (this.bytes > this.maxBytes) {
        const lru = this.entries.reduce((a, b) => (b.lastUsed < a.lastUsed ? b : a));
        await this.drop(lru);
        this.stats.evicted++;
      }
    } catch (err) {
      this.stats.failed++;
      this.o.logger?.warn({ err, tokens: tokens.length }, 'could not keep a prompt state on disk; it will be evaluated again when needed');
      await unlink(file).catch(() => undefined);
    }
  }

  /**
   * Loads a state found by `best` into `seq` (replacing what it holds). False when the state is
   * gone meanwhile (evicted) or cannot be read: `seq` is then empty and the prompt is evaluated.
   */
  async load(match: KvMatch, seq: LlamaContextSequence): Promise<boolean> {
    const e = match.entry as Entry;
    if (!this.entries.includes(e)) return false;
    e.lastUsed = ++this.clock;
    try {
      await seq.loadStateFromFile(e.file, { acceptRisk: true });
      this.stats.loaded++;
      return true;
    } catch (err) {
      this.stats.failed++;
      this.o.logger?.warn({ err, tokens: e.tokens.length }, 'could not load a kept prompt state; evaluating the prompt instead');
      await this.drop(e);
      await seq.clearHistory();
      return false;
    }
  }

  private async drop(e: Entry): Promise<void> {
    const i = this.entries.indexOf(e);
    if (i < 0) return;
    this.entries.splice(i, 1);
    this.bytes -= e.bytes;
    await unlink(e.file).catch(() => undefined);
  }

  async close(): Promise<void> {
    this.entries = [];
    this.bytes = 0;
    await rm(this.o.dir, { recursive: true, force: true });
  }
}

const TEMP_PREFIX = 'turnstream-kv-';

/**
 * A folder of this process's own under the system's temp folder, for `KvStates.open`. Folders
 * that processes no longer running left there (killed before `close`) are removed first.
 */
export async function tempStatesDir(): Promise<string> {
  const root = tmpdir();
  for (const name of await readdir(root).catch(() => [] as string[])) {
    const pid = Number(/^turnstream-kv-(\d+)-/.exec(name)?.[1]);
    if (pid && pid !== process.pid && !alive(pid)) await rm(join(root, name), { recursive: true, force: true });
  }
  return join(root, `${TEMP_PREFIX}${process.pid}-${randomBytes(4).toString('hex')}`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function commonPrefix(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

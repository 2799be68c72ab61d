/**
 * A slow check whose result is kept in a file with a fingerprint of what it depends on: read back
 * while the fingerprint is the same (and the result younger than `maxAgeMs`), else checked again
 * and kept. `turnstream doctor` keeps its tfjs and llama.cpp checks this way (cli/commands/doctor.ts
 * says what they depend on).
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

export interface CachedProbeOptions<T> {
  /** The file the result is kept in. */
  file: string;
  /** Everything the result depends on, as JSON-able values: any change runs the check again. */
  inputs: Record<string, unknown>;
  /** A result older than this is checked again. */
  maxAgeMs: number;
  /** Check again whatever the file holds. @default false */
  fresh?: boolean;
  /** The check. */
  run: () => Promise<T>;
  /** Whether a result is kept (e.g. not one that failed for a reason that may pass). @default always */
  keep?: (value: T) => boolean;
}

export interface CachedProbe<T> {
  value: T;
  /** Read from the file (else checked now). */
  cached: boolean;
  /** When it was checked (ISO 8601). */
  checkedAt: string;
  file: string;
  /** Why a result checked now was not kept, where it was not. */
  notKept?: string;
}

interface Kept<T> {
  fingerprint: string;
  checkedAt: string;
  value: T;
}

export const fingerprintOf = (inputs: Record<string, unknown>): string => createHash('sha256').update(JSON.stringify(inputs)).digest('hex');

/** The kept result when it is still good, else the check run now (and kept). */
export async function cachedProbe<T>(o: CachedProbeOptions<T>): Promise<CachedProbe<T>> {
  // Taken before the check: a check that changes what it depends on (a first build) runs again next time.
  const fingerprint = fingerprintOf(o.inputs);
  if (!o.fresh) {
    const kept = await readFile(o.file, 'utf8').then(
      (t) => JSON.parse(t) as Kept<T>,
      () => undefined,
    );
    const age = kept ? Date.now() - Date.parse(kept.checkedAt) : Infinity;
    if (kept?.fingerprint === fingerprint && age >= 0 && age < o.maxAgeMs)
      return { value: kept.value, cached: true, checkedAt: kept.checkedAt, file: o.file };
  }
  const value = await o.run();
  const checkedAt = new Date().toISOString();
  const result: CachedProbe<T> = { value, cached: false, checkedAt, file: o.file };
  if (o.keep && !o.keep(value)) return { ...result, notKept: 'a check failed; it runs again next time' };
  try {
    await mkdir(dirname(o.file), { recursive: true });
    const tmp = `${o.file}.${process.pid}.tmp`;
    await writeFile(tmp, `${JSON.stringify({ fingerprint, checkedAt, value } satisfies Kept<T>)}\n`);
    await rename(tmp, o.file);
  } catch (err) {
    // The report is still right; only the next run is slower.
    return { ...result, notKept: (err as Error).message };
  }
  return result;
}

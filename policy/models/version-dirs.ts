/**
 * Versioned folders of a model: `<dir>/v<N>/`, complete once its manifest file is written (the
 * last step of a save, so a folder without one is a save that did not finish).
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** The versions under `dir` whose folder holds `manifest`, ascending; none when `dir` does not exist. */
export async function completeVersions(dir: string, manifest: string): Promise<number[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const out: number[] = [];
  for (const name of names) {
    const m = /^v(\d+)$/.exec(name);
    if (!m) continue;
    try {
      await stat(join(dir, name, manifest));
      out.push(Number(m[1]));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return out.sort((a, b) => a - b);
}

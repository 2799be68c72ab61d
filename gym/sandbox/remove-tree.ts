/** Removing a sandbox's folder, whatever modes its commands left on it. */
import { chmod, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

/** Removes a folder and all in it; a folder a command made unreadable (chmod 000) is opened up first. */
export async function removeTree(dir: string): Promise<void> {
  try {
    await rm(dir, { recursive: true, force: true });
  } catch {
    // what stops a non-root rm: open it up and retry
    await openUp(dir);
    await rm(dir, { recursive: true, force: true });
  }
}

/** Gives the owner rwx on every folder below `dir`. */
async function openUp(dir: string): Promise<void> {
  await chmod(dir, 0o700).catch(() => undefined);
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const e of entries) if (e.isDirectory()) await openUp(join(dir, e.name));
}

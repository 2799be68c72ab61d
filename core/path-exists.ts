/** Whether a path exists; an error other than "not found" (permissions, I/O) is thrown, not read as absence. */
import { stat } from 'node:fs/promises';

export async function pathExists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/** Temporary folders for tests: one per suite (made before its tests, removed after them) or one per call. */
import { mkdtempSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';

/**
 * A fresh folder named `prefix…` under the system's temp folder for the tests of the enclosing
 * suite (or file): made before them, removed after them. Call the result for its path (there is
 * none before the suite's `before` hooks have run).
 */
export function suiteTempDir(prefix: string): () => string {
  let dir: string | undefined;
  // Made synchronously: at a file's top level Node 20 starts the before hooks without awaiting the
  // ones registered earlier, and the file's own hooks may already use the folder.
  before(() => {
    dir = mkdtempSync(join(tmpdir(), prefix));
  });
  after(async () => {
    // A service a test stopped a moment ago may still be finishing a write in it.
    if (dir) await rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  });
  return () => {
    if (dir === undefined) throw new Error(`the temp folder ${prefix}… is made in a before hook; ask for it in a test or a later hook`);
    return dir;
  };
}

/** Runs `body` in a fresh folder named `prefix…`, removed after it whatever happens. */
export async function withTempDir<T>(prefix: string, body: (dir: string) => T | Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  try {
    return await body(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

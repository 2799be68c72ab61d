/**
 * ClickHouse 26.x in-process (npm `chdb`) for tests that check the analytics DDL and queries on a
 * current server, next to the stack's (Debian's 18.16). Installed once into a cache folder
 * ($TURNSTREAM_CHDB_CACHE, else ~/.cache/turnstream/chdb-<version>, ≈ 550 MB) rather than as a
 * dependency of every install.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import type { AnalyticsOptions } from '../../warehouse/index.ts';

export const CHDB_VERSION = '3.4.0';

const run = promisify(execFile);

/** Installs chdb once; returns a loader of its `@clickhouse/client` connection. */
export async function ensureChdb(): Promise<{
  connection: (path: string) => NonNullable<AnalyticsOptions['connection']> & { close(): Promise<void> };
}> {
  const dir = process.env.TURNSTREAM_CHDB_CACHE || join(homedir(), '.cache', 'turnstream', `chdb-${CHDB_VERSION}`);
  if (!existsSync(join(dir, '.ready'))) {
    const tmp = `${dir}.tmp-${process.pid}`;
    await rm(tmp, { recursive: true, force: true });
    await mkdir(tmp, { recursive: true });
    await writeFile(join(tmp, 'package.json'), JSON.stringify({ name: 'turnstream-chdb-cache', private: true }));
    await run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', `chdb@${CHDB_VERSION}`], { cwd: tmp, maxBuffer: 16 << 20 });
    await writeFile(join(tmp, '.ready'), `chdb@${CHDB_VERSION}\n`);
    await rm(dir, { recursive: true, force: true });
    await mkdir(dirname(dir), { recursive: true });
    await rename(tmp, dir);
  }
  const require = createRequire(join(dir, 'node_modules', '/'));
  const { createChdbConnection } = require('chdb/connection') as { createChdbConnection: (o: { path: string }) => never };
  return { connection: (path) => createChdbConnection({ path }) };
}

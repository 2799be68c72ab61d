/**
 * The host's system, as the sandbox mounts it: each path read-only at the same place, and each
 * symlink (`/bin -> usr/bin` on a merged-/usr system) recreated as the same symlink.
 */
import { lstatSync, readlinkSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { invalidInput } from '../../core/index.ts';

/** One system path inside the sandbox. */
export type SystemMount = { kind: 'bind'; path: string } | { kind: 'symlink'; path: string; target: string };

/** Paths the sandbox mounts itself. */
const RESERVED = ['/workspace', '/tmp', '/proc', '/dev'];

const below = (parent: string, path: string): boolean => path === parent || path.startsWith(`${parent}/`);

/**
 * The host's system paths that exist, as mounts (paths missing on the host are left out).
 * @throws TurnstreamError TS_ERR_INVALID_INPUT for a relative path, `/`, `..`, a path below
 * another one or below a path the sandbox mounts itself
 */
export function systemMounts(paths: readonly string[]): SystemMount[] {
  const mounts: SystemMount[] = [];
  for (const path of paths) {
    const bad = (why: string) => invalidInput(`system path ${JSON.stringify(path)}: ${why}`, 'systemPaths');
    if (!isAbsolute(path) || path === '/' || path.endsWith('/') || path.split('/').includes('..') || path.split('/').includes('.')) {
      throw bad('must be absolute, below /, without "." or ".." and without a trailing /');
    }
    const clash = [...RESERVED, ...paths.filter((p) => p !== path)].find((p) => below(p, path) || below(path, p));
    if (clash) throw bad(RESERVED.includes(clash) ? `${clash} is the sandbox's own` : `overlaps ${clash}`);
    const stat = (() => {
      try {
        return lstatSync(path);
      } catch {
        return undefined;
      }
    })();
    if (!stat) continue;
    mounts.push(stat.isSymbolicLink() ? { kind: 'symlink', path, target: readlinkSync(path) } : { kind: 'bind', path });
  }
  return mounts;
}

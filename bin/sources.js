// The TypeScript sources and their compiled copy in dist/ (`npm run build`, bin/build.js): which
// folders are sources (tsconfig.build.json's `include`), which of their files are assets the
// compiled code reads beside it (everything that is not TypeScript), and whether dist/ is current.
// Used by bin/build.js and, in a checkout, by bin/turnstream.js; not part of the package.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root. */
export const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The compiler's settings for dist/. */
export const buildConfig = (root = ROOT) => join(root, 'tsconfig.build.json');
/** Written last by a build: when it started, so that a source saved during the build counts as newer. */
export const stamp = (root = ROOT) => join(root, 'dist', 'build.json');

/** Folders copied as they are, TypeScript included: the OpenClaw plugin, which OpenClaw loads from source. */
export const VERBATIM = ['integrations/openclaw/rl-training-headers'];

/** Left out of the sources: build outputs and installs of the benchmarks' peers (bench/kafka-clients, bench/kstreams), and dot-folders. */
export const skipped = (name) => name === 'node_modules' || name === 'target' || name === '__pycache__' || name.startsWith('.');

/** The source folders, relative to the root. */
export function sourceFolders(root = ROOT) {
  return JSON.parse(readFileSync(buildConfig(root), 'utf8')).include;
}

/** Every file and folder under the source folders (absolute paths; skipped folders left out). */
export function sourceEntries(root = ROOT) {
  const out = [];
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (skipped(e.name)) continue;
      const p = join(dir, e.name);
      out.push(p);
      if (e.isDirectory()) walk(p);
    }
  };
  for (const f of sourceFolders(root)) {
    const dir = join(root, f);
    if (!existsSync(dir)) continue;
    out.push(dir);
    walk(dir);
  }
  return out;
}

const isVerbatim = (rel) => VERBATIM.some((v) => rel === v || rel.startsWith(`${v}/`));

/** The files the build copies into dist/ as they are (paths relative to the root): non-TypeScript files, and the verbatim folders. */
export function assetFiles(root = ROOT) {
  return sourceEntries(root)
    .map((p) => relative(root, p))
    .filter((rel) => statSync(join(root, rel)).isFile() && (isVerbatim(rel) || !rel.endsWith('.ts')));
}

/**
 * Whether dist/ holds a build of the sources as they are now: the stamp of a finished build, and no
 * source file or folder changed since that build started (a folder's time covers a file added,
 * removed or renamed in it).
 */
export function distIsCurrent(root = ROOT) {
  let startedAt;
  try {
    startedAt = JSON.parse(readFileSync(stamp(root), 'utf8')).startedAt;
  } catch {
    return false;
  }
  if (typeof startedAt !== 'number') return false;
  for (const p of [buildConfig(root), ...sourceEntries(root)]) if (statSync(p).mtimeMs >= startedAt) return false;
  return true;
}

/**
 * What a module loads when it is imported: its static imports, followed through the project's
 * own files, and the packages they name. Type-only imports are left out (they are erased), and so
 * are dynamic `import()`s (they load later, when the code that makes them runs).
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** Every import (and re-export) of a module's source that is loaded with it. */
export function staticImports(source: string): string[] {
  const out: string[] = [];
  const re = /^\s*(import|export)\s+(type\s+)?([^;'"]*?\sfrom\s+)?['"]([^'"]+)['"]/gms;
  for (const m of source.matchAll(re)) {
    if (m[2]) continue; // `import type …`, `export type …`
    // `export { … }` with no `from`, and `import x = …`, are not imports.
    if (m[1] === 'export' && !m[3]) continue;
    out.push(m[4]);
  }
  return out;
}

export interface ImportGraph {
  /** The project's files loaded, absolute. */
  files: Set<string>;
  /** The packages loaded (`node:` built-ins left out), by name (`@scope/name` or `name`). */
  packages: Set<string>;
}

/** The project files and packages loaded by importing `entry` (an absolute .ts path). */
export function importGraph(entry: string): ImportGraph {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    for (const spec of staticImports(readFileSync(file, 'utf8'))) {
      if (spec.startsWith('.')) visit(resolve(dirname(file), spec));
      else if (!spec.startsWith('node:')) packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]);
    }
  };
  visit(entry);
  return { files, packages };
}

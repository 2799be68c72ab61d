/**
 * docs/configuration.md names every environment variable cli/config.ts reads, and none it does
 * not: the variables loadConfig asks its environment for, and every name the file reads as
 * `env.NAME` or through its SettingsReader (`r.number('NAME', …)`), against the first column
 * of the page's table.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadConfig } from '../../../cli/config.ts';
import { ROOT } from './markdown.ts';

const NAME = /^[A-Z][A-Z0-9_]*$/;

/** The names loadConfig reads from an empty environment, and every name the source reads. */
function readByCode(): Set<string> {
  const names = new Set<string>();
  const env = new Proxy({} as Record<string, string | undefined>, {
    get(_t, key) {
      if (typeof key === 'string' && NAME.test(key)) names.add(key);
      return undefined;
    },
  });
  const cwd = mkdtempSync(join(tmpdir(), 'turnstream-config-doc-'));
  try {
    loadConfig(env, cwd);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
  const source = readFileSync(join(ROOT, 'cli', 'config.ts'), 'utf8');
  for (const m of source.matchAll(/\benv\.([A-Z][A-Z0-9_]*)\b/g)) names.add(m[1]);
  for (const m of source.matchAll(/\br\.[a-zA-Z]+\(\s*'([A-Z][A-Z0-9_]*)'/g)) names.add(m[1]);
  return names;
}

/** The backquoted names in the first column of docs/configuration.md's tables. */
function documented(): Set<string> {
  const names = new Set<string>();
  for (const line of readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8').split('\n')) {
    const cell = /^\|([^|]*)\|/.exec(line)?.[1] ?? '';
    for (const m of cell.matchAll(/`([^`]+)`/g)) if (NAME.test(m[1])) names.add(m[1]);
  }
  return names;
}

test('docs/configuration.md documents every variable cli/config.ts reads, and only those', () => {
  const code = readByCode();
  const docs = documented();
  assert.ok(code.size > 50 && docs.size > 50, `both sides found (${code.size} read, ${docs.size} documented)`);
  assert.deepEqual([...code].filter((n) => !docs.has(n)).sort(), [], 'read by cli/config.ts but not in docs/configuration.md');
  assert.deepEqual([...docs].filter((n) => !code.has(n)).sort(), [], 'in docs/configuration.md but not read by cli/config.ts');
});

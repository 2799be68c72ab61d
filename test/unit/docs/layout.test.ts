/**
 * Where things live: the README stays a short guide (the rest is in docs/), and run results stay
 * in the top-level results/, out of the source folders.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { ROOT } from './markdown.ts';

const README_LIMIT = 15_000;

/** The folders that hold source code (docs/design/architecture.md, "Layout"). */
const SOURCE_FOLDERS = [
  'core',
  'schemas',
  'streams',
  'warehouse',
  'policy',
  'gateway',
  'processors',
  'history',
  'trainer',
  'measure',
  'eval',
  'gym',
  'integrations',
  'analytics',
  'infra',
  'cli',
  'bench',
];

test(`README.md is at most ${README_LIMIT.toLocaleString('en')} characters`, () => {
  const chars = [...readFileSync(join(ROOT, 'README.md'), 'utf8')].length;
  assert.ok(chars <= README_LIMIT, `README.md has ${chars} characters; move details to docs/`);
});

test('no source folder holds a results/ folder: run results go to the top-level results/', () => {
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (!e.isDirectory() || e.name === 'node_modules' || e.name.startsWith('.')) continue;
      const p = join(dir, e.name);
      if (e.name === 'results') found.push(relative(ROOT, p));
      walk(p);
    }
  };
  for (const f of SOURCE_FOLDERS) if (existsSync(join(ROOT, f))) walk(join(ROOT, f));
  assert.deepEqual(found, []);
  assert.ok(existsSync(join(ROOT, 'results', 'README.md')), 'results/ says what it holds');
});

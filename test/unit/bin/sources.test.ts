/**
 * bin/sources.js: what the build copies beside the compiled code, and when dist/ is current (so
 * that bin/turnstream.js runs it rather than the sources).
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { VERBATIM, assetFiles, distIsCurrent, skipped, sourceEntries, stamp } from '../../../bin/sources.js';
import { REPO_ROOT } from '../../support/stack.ts';
import { suiteTempDir } from '../../support/temp-dir.ts';

const write = (file: string, text = '') => {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
};
const at = (file: string, ms: number) => utimesSync(file, ms / 1000, ms / 1000);
/** The files under `dir`, as the build sees them (a peer's install or build output left out). */
const files = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true })
    .filter((e) => !skipped(e.name))
    .flatMap((e) => (e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)]));

describe('the sources and dist/', () => {
  const dir = suiteTempDir('ts-sources-');

  it('every file the code finds beside itself (new URL(…, import.meta.url)) is compiled, or copied into dist/', () => {
    const assets = new Set(assetFiles());
    const refs: string[] = [];
    for (const file of sourceEntries().filter((p) => p.endsWith('.ts') && statSync(p).isFile())) {
      for (const m of readFileSync(file, 'utf8').matchAll(/new URL\(\s*'([^']+)',\s*import\.meta\.url\s*\)/g)) {
        const target = relative(REPO_ROOT, resolve(dirname(file), m[1]));
        refs.push(target);
        if (target.endsWith('.ts')) continue; // compiled
        // up and chaos start services through the command; the build writes dist/bin/turnstream.js.
        if (target === 'bin/turnstream.js') continue;
        const isDir = statSync(join(REPO_ROOT, target)).isDirectory();
        const wanted = isDir ? files(join(REPO_ROOT, target)).map((f) => relative(REPO_ROOT, f)) : [target];
        assert.ok(wanted.length > 0, target);
        for (const w of wanted.filter((f) => !f.endsWith('.ts') || VERBATIM.some((v) => f.startsWith(`${v}/`))))
          assert.ok(assets.has(w), `${w} (from ${relative(REPO_ROOT, file)}) is copied into dist/`);
      }
    }
    for (const must of ['eval/personas.json', 'gym/suites/answer-format.jsonl', 'policy/builtin/base', 'infra/kafka/pom.xml'])
      assert.ok(
        refs.some((r) => r.startsWith(must)),
        `${must} is found beside the code`,
      );
    for (const v of VERBATIM) assert.ok(assets.has(`${v}/index.ts`), `${v} is copied as it is, its TypeScript included`);
    assert.ok(assets.has('schemas/avsc/turnstream.turns.v1.avsc'));
    assert.ok(![...assets].some((a) => a.endsWith('.ts') && !VERBATIM.some((v) => a.startsWith(`${v}/`))), 'no other TypeScript');
  });

  it('compiles every folder the type-check covers, but the tests and bin/ (a new layer is added to both)', () => {
    const include = (f: string): string[] => JSON.parse(readFileSync(join(REPO_ROOT, f), 'utf8')).include;
    assert.deepEqual(
      [...include('tsconfig.build.json')].sort(),
      include('tsconfig.json')
        .filter((f) => f !== 'test' && f !== 'bin')
        .sort(),
    );
  });

  it('copies what is not TypeScript, skipping installs and build outputs of the peers', () => {
    const root = join(dir(), 'copy');
    write(join(root, 'tsconfig.build.json'), JSON.stringify({ include: ['a', 'integrations'] }));
    write(join(root, 'a', 'x.ts'));
    write(join(root, 'a', 'data', 'p.json'), '{}');
    write(join(root, 'a', 'peer', 'node_modules', 'dep', 'index.js'));
    write(join(root, 'a', 'peer', 'target', 'out.jar'));
    write(join(root, 'a', '.venv', 'python'));
    write(join(root, 'integrations', 'openclaw', 'rl-training-headers', 'index.ts'));
    write(join(root, 'b', 'not-a-source.json'));
    assert.deepEqual(assetFiles(root).sort(), ['a/data/p.json', 'integrations/openclaw/rl-training-headers/index.ts']);
  });

  it('dist/ is current when its build started after every source file and folder last changed', () => {
    const root = join(dir(), 'fresh');
    write(join(root, 'tsconfig.build.json'), JSON.stringify({ include: ['a'] }));
    write(join(root, 'a', 'x.ts'));
    write(join(root, 'a', 'sub', 'y.json'));
    const t = Date.now() - 60_000;
    for (const p of ['tsconfig.build.json', 'a', 'a/x.ts', 'a/sub', 'a/sub/y.json']) at(join(root, p), t);
    assert.equal(distIsCurrent(root), false, 'no build');
    write(stamp(root), JSON.stringify({ startedAt: t + 1000 }));
    assert.equal(distIsCurrent(root), true);
    at(join(root, 'a', 'sub', 'y.json'), t + 2000);
    assert.equal(distIsCurrent(root), false, 'an asset saved after the build started');
    at(join(root, 'a', 'sub', 'y.json'), t);
    at(join(root, 'a'), t + 2000);
    assert.equal(distIsCurrent(root), false, 'a file added or removed in a folder');
    at(join(root, 'a'), t);
    write(stamp(root), 'not json');
    assert.equal(distIsCurrent(root), false, 'a build that did not finish');
  });
});

#!/usr/bin/env node
// `npm run build` (and `prepare`, so `npm install` in a checkout and `npm pack` build too):
// compiles the sources to dist/ with tsc (tsconfig.build.json: `.ts` imports rewritten to `.js`),
// copies the files the compiled code reads beside it (personas, task suites, .avsc, the shipped
// base model, pom.xml files, the OpenClaw plugin as it is), and writes dist/build.json last.
// bin/turnstream.js runs dist/ when that build is current, else the sources through tsx.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ROOT, assetFiles, buildConfig, stamp } from './sources.js';

const startedAt = Date.now();
const dist = join(ROOT, 'dist');
// From scratch: a source deleted since the last build must not leave its output behind.
rmSync(dist, { recursive: true, force: true });

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const r = spawnSync(process.execPath, [tsc, '-p', buildConfig()], { cwd: ROOT, stdio: 'inherit' });
if (r.status !== 0) {
  console.error(`turnstream build: tsc failed (exit ${r.status ?? r.signal})`);
  process.exit(1);
}

const assets = assetFiles();
for (const rel of assets) {
  mkdirSync(dirname(join(dist, rel)), { recursive: true });
  cpSync(join(ROOT, rel), join(dist, rel));
}
// The compiled code finds the command where the sources do, two folders up from cli/commands/ and
// bench/chaos/ (`up` and `chaos` start their services through it): dist/bin/turnstream.js is that
// same command.
mkdirSync(join(dist, 'bin'), { recursive: true });
writeFileSync(join(dist, 'bin', 'turnstream.js'), "#!/usr/bin/env node\nimport '../../bin/turnstream.js';\n");

writeFileSync(stamp(), `${JSON.stringify({ startedAt, ms: Date.now() - startedAt, assets: assets.length })}\n`);
console.error(`turnstream build: dist/ in ${((Date.now() - startedAt) / 1000).toFixed(1)} s (${assets.length} assets)`);

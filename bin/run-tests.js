#!/usr/bin/env node
// `npm test`: finds test files under test/<suite>/ and runs them with node:test through tsx.
// Integration and e2e suites need the local stack; they ensure it in test/support/stack.ts.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const suites = process.argv.slice(2).length ? process.argv.slice(2) : ['unit', 'integration', 'e2e'];
const files = [];
const walk = (dir) => {
  let entries = [];
  try { entries = readdirSync(dir); } catch { return; }
  for (const name of entries.sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (name.endsWith('.test.ts')) files.push(p);
  }
};
for (const s of suites) walk(join('test', s));
if (files.length === 0) {
  console.error(`no test files found in ${suites.join(', ')}`);
  process.exit(1);
}
// --test-force-exit: a file whose tests are done but which left a handle open must not stall the run.
const args = ['--import', 'tsx', '--test', '--test-concurrency=1', '--test-force-exit', '--test-reporter=spec', ...files];
const res = spawnSync(process.execPath, args, { stdio: 'inherit', env: { KAFKAJS_NO_PARTITIONER_WARNING: '1', LOG_LEVEL: 'warn', ...process.env, NODE_ENV: 'test' } });
process.exit(res.status ?? 1);

#!/usr/bin/env node
// `npm test`: finds test files under test/<suite>/ and runs them with node:test through tsx.
// Prints the spec output, then `N tests, N passed, N failed, N files`.
// Integration and e2e suites need the local stack; they ensure it in test/support/stack.ts.
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const suites = process.argv.slice(2).length ? process.argv.slice(2) : ['unit', 'integration', 'e2e'];
const files = [];
const walk = (dir) => {
  let entries = [];
  try {
    entries = readdirSync(dir);
  } catch {
    return;
  }
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
const env = { KAFKAJS_NO_PARTITIONER_WARNING: '1', LOG_LEVEL: 'warn', ...process.env, NODE_ENV: 'test' };

// Every test file runs in a process of its own. The native stack is shared between them by its
// ports; containers are not, so when the tests would run on containers they are started here,
// once for the whole run, and handed to every file as given endpoints (and removed at the end).
let containers;
if (suites.some((s) => s !== 'unit')) {
  const { register } = await import('tsx/esm/api');
  register();
  const { startRunContainers } = await import('../test/support/stack.ts');
  try {
    containers = await startRunContainers();
  } catch (err) {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(1);
  }
  if (containers) Object.assign(env, containers.env);
}

// test/support/run-test-files.ts runs the files one after another, each in a process of its own
// (stopped when it lingers after its last result: a handle left open must not stall the run), and
// fails the run when a file reported fewer tests than it declared, which node's runner alone
// would let pass.
const runner = fileURLToPath(new URL('../test/support/run-test-files.ts', import.meta.url));
const args = ['--import', 'tsx', runner, ...files];
const child = spawn(process.execPath, args, { stdio: 'inherit', env });
const forward = (sig) => child.kill(sig);
process.on('SIGINT', forward);
process.on('SIGTERM', forward);
const status = await new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
if (containers) await containers.stop().catch((err) => console.error(`# stack containers: ${err.message}`));
process.exit(status);

/**
 * The npm package, as a user gets it: `npm pack` (which builds dist/), then `npm install -g` of
 * the tarball into a temporary prefix, and that prefix's `turnstream up` against the shared stack
 * (given as endpoints), from a folder outside the repository: every service comes up from the
 * installed files, the official openai client gets an answer, and Ctrl-C stops everything.
 *
 * The install takes what it can from npm's cache (`--prefer-offline`: after `npm install` in the
 * repository only the registry's package lists may be fetched once), and runs no dependency's
 * install script (`--ignore-scripts`, docs/getting-started.md says why): tfjs-node's would
 * download a libtensorflow turnstream does not use; `up` links the native build from its cache.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { ensureStack, REPO_ROOT, uniquePrefix } from '../support/stack.ts';
import { spawnUp } from '../support/turnstream-up.ts';

const exec = promisify(execFile);
let stack: Awaited<ReturnType<typeof ensureStack>>;
const dir = mkdtempSync(join(tmpdir(), 'turnstream-pack-'));
// The same Node for npm's scripts and the installed command's `#!/usr/bin/env node`.
const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}` };

describe('the npm package', { timeout: 900_000 }, () => {
  before(async () => {
    stack = await ensureStack();
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('npm pack, npm install -g of the tarball: its turnstream runs up from the installed files, answers the openai client, and stops on Ctrl-C', async () => {
    const packed = await exec('npm', ['pack', '--pack-destination', dir, '--loglevel=error'], { cwd: REPO_ROOT, env, maxBuffer: 1 << 24 });
    const tarball = join(dir, packed.stdout.trim().split('\n').at(-1)!);
    assert.match(tarball, /turnstream-\d+\.\d+\.\d+\.tgz$/);
    const prefix = join(dir, 'prefix');
    await exec(
      'npm',
      ['install', '-g', '--prefix', prefix, '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', tarball],
      { cwd: dir, env, maxBuffer: 1 << 24 },
    );
    const installed = join(prefix, 'lib', 'node_modules', 'turnstream');
    assert.ok(existsSync(join(installed, 'dist', 'cli', 'main.js')), 'the compiled code');
    assert.ok(existsSync(join(installed, 'dist', 'eval', 'personas.json')), 'the files it reads beside it');
    assert.match(readFileSync(join(installed, 'LICENSE'), 'utf8'), /Apache License\s+Version 2\.0, January 2004/);
    for (const absent of ['cli/main.ts', 'test', 'results', 'docs/design', 'tsconfig.json'])
      assert.ok(!existsSync(join(installed, absent)), `no ${absent} in the package`);

    const home = join(dir, 'home');
    const up = await spawnUp({
      command: [join(prefix, 'bin', 'turnstream')],
      cwd: dir,
      env,
      stack,
      home,
      topicPrefix: uniquePrefix('pack'),
    });
    try {
      await up.ready();
      const out = up.output();
      // The services run the installed command, with their logs in the home given.
      const services = [...out.matchAll(/^\s+(\S+)\s+ready\s+pid (\d+)/gm)].map((m) => ({ name: m[1], pid: Number(m[2]) }));
      assert.ok(services.length >= 6, `the services:\n${out}`);
      for (const s of services) {
        const argv = readFileSync(`/proc/${s.pid}/cmdline`, 'utf8').split('\0');
        assert.ok(
          argv.some((a) => a.startsWith(join(installed, 'dist'))),
          `${s.name} runs from ${installed}: ${argv.join(' ')}`,
        );
      }
      assert.ok(existsSync(join(home, 'logs')), 'logs in TURNSTREAM_HOME');

      const client = new OpenAI({ baseURL: `http://127.0.0.1:${up.port}/v1`, apiKey: 'none', maxRetries: 0 });
      const model = (await client.models.list()).data[0].id;
      // The README's question: the bare one got French from SmolLM2 at temperature 0 here ("La femme de France, …").
      const reply = await client.chat.completions.create({
        model,
        max_tokens: 24,
        temperature: 0,
        messages: [{ role: 'user', content: 'What is the capital of France? Answer in one sentence.' }],
      });
      assert.match(reply.choices[0].message.content ?? '', /Paris/);
    } finally {
      await up.stop();
    }
  });
});

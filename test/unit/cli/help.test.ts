/**
 * The help a user reads is the same whether every command module is loaded (as before commands
 * were loaded on demand) or only the one asked for (cli/commands/index.ts), and `turnstream
 * --help` loads none of them.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { Command } from 'commander';
import { COMMANDS, MODULES, registerCommands, requestedCommand } from '../../../cli/commands/index.ts';
import { createProgram } from '../../../cli/main.ts';
import { importGraph } from '../../support/import-graph.ts';
import { REPO_ROOT } from '../../support/stack.ts';

/** The program with every module registered, in the order of the list. */
async function eagerProgram(): Promise<Command> {
  const program = createProgram();
  const seen = new Set<string>();
  for (const c of COMMANDS) {
    if (seen.has(c.module)) continue;
    seen.add(c.module);
    (await MODULES[c.module]()).register(program);
  }
  return program;
}

/** Every command path (`['infra', 'up']`, …) of a program. */
function paths(cmd: Command, prefix: string[] = []): string[][] {
  return cmd.commands.flatMap((c) => [[...prefix, c.name()], ...paths(c, [...prefix, c.name()])]);
}

const find = (program: Command, path: string[]): Command =>
  path.reduce<Command>((c, name) => c.commands.find((s) => s.name() === name) ?? assert.fail(`no command ${path.join(' ')}`), program);

describe('turnstream help, with commands loaded on demand', { timeout: 300_000 }, () => {
  it('is the same for the root and for every command (and its sub-commands) as with every module loaded', async () => {
    const eager = await eagerProgram();
    const root = createProgram();
    await registerCommands(root, undefined);
    assert.equal(
      root.helpInformation(),
      eager.helpInformation(),
      'turnstream --help (cli/commands/index.ts has a stale name or description)',
    );
    const all = paths(eager);
    assert.ok(all.length >= COMMANDS.length + 5, `every command and sub-command (${all.length})`);
    for (const path of all) {
      const lazy = createProgram();
      await registerCommands(lazy, requestedCommand(['node', 'turnstream', ...path, '--help']));
      assert.equal(find(lazy, path).helpInformation(), find(eager, path).helpInformation(), `turnstream ${path.join(' ')} --help`);
      // `turnstream help NAME` asks for the same command.
      assert.equal(requestedCommand(['node', 'turnstream', 'help', ...path]), path[0]);
    }
    assert.deepEqual(
      eager.commands.map((c) => c.name()),
      COMMANDS.map((c) => c.name),
      'the list names every command, in order',
    );
  });

  it('finds the command after the root options, or after help', () => {
    const argv = (...a: string[]) => ['node', 'turnstream', ...a];
    assert.equal(requestedCommand(argv()), undefined);
    assert.equal(requestedCommand(argv('--help')), undefined);
    assert.equal(requestedCommand(argv('-V')), undefined);
    assert.equal(requestedCommand(argv('help')), undefined);
    assert.equal(requestedCommand(argv('up', '--dashboard-port', '1')), 'up');
    assert.equal(requestedCommand(argv('infra', 'status', '--json')), 'infra');
    assert.equal(requestedCommand(argv('help', 'gym')), 'gym');
    assert.equal(requestedCommand(argv('nosuch')), 'nosuch');
  });

  it('turnstream --help loads commander and the command list, no command module', () => {
    const g = importGraph(join(REPO_ROOT, 'cli', 'main.ts'));
    assert.deepEqual(
      [...g.files].map((f) => f.slice(REPO_ROOT.length)).sort(),
      ['cli/commands/index.ts', 'cli/main.ts'],
      'what cli/main.ts loads before a command is chosen',
    );
    assert.deepEqual([...g.packages], ['commander']);

    // As run: the modules the process loads (dist/ or, when it is not current, the sources through tsx).
    const record = join(tmpdir(), `turnstream-help-loads-${process.pid}`);
    const r = spawnSync(process.execPath, ['--import', join(REPO_ROOT, 'test/support/record-loads.mjs'), 'bin/turnstream.js', '--help'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      env: { ...process.env, RECORD_LOADS_FILE: record },
    });
    assert.equal(r.status, 0, r.stderr);
    const loaded = readFileSync(record, 'utf8').split('\n').filter(Boolean);
    const heavy = loaded.filter((u) =>
      /node_modules\/(@tensorflow|node-llama-cpp|kafkajs|fastify|@confluentinc|openai|pino|prom-client|@clickhouse|dotenv)\//.test(u),
    );
    assert.deepEqual(heavy, [], 'no library of a command');
    const own = loaded
      .filter((u) => u.startsWith('file://') && !u.includes('/node_modules/'))
      .map((u) =>
        u
          .slice(`file://${REPO_ROOT}`.length)
          .replace(/^dist\//, '')
          .replace(/\.js$/, '.ts'),
      );
    assert.deepEqual(
      own.filter((f) => !f.startsWith('bin/') && !f.startsWith('test/support/')).sort(),
      ['cli/commands/index.ts', 'cli/main.ts'],
      'no command module',
    );
  });

  it('a command marked as loading no tfjs at start does not (its tfjs settings are not applied)', () => {
    const marked = COMMANDS.filter((c) => c.tfjs === false);
    assert.deepEqual(
      marked.map((c) => c.name),
      ['infra', 'dashboard', 'report', 'dlq', 'openclaw', 'doctor'],
    );
    for (const c of marked) {
      const g = importGraph(join(REPO_ROOT, 'cli', 'commands', `${c.module}.ts`));
      assert.ok(!g.packages.has('@tensorflow/tfjs'), `${c.name} loads no tfjs`);
      assert.deepEqual(
        [...g.files].filter((f) => f.includes('/policy/')),
        [],
        `${c.name} loads nothing of policy/`,
      );
    }
  });
});

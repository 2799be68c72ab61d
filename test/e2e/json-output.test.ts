/**
 * Every `--json` command, run as a user runs it (`bin/turnstream.js`, LOG_LEVEL=info so that
 * logs are written): stdout is exactly one JSON object, whatever else the command logs or prints
 * (that goes to stderr). And an error ends a command with one line on stderr: exit 2 for bad
 * input, also once tfjs (wasm) is loaded.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { ensureStack, REPO_ROOT, uniquePrefix } from '../support/stack.ts';

const exec = promisify(execFile);

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

describe('--json commands print exactly one JSON object', { timeout: 600_000 }, () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    const stack = await ensureStack();
    dir = await mkdtemp(join(tmpdir(), 'ts-json-output-'));
    const prefix = uniquePrefix('json-output');
    env = {
      ...process.env,
      KAFKA_BROKERS: stack.brokers,
      SCHEMA_REGISTRY_URL: stack.registryUrl,
      CLICKHOUSE_URL: stack.clickhouseUrl,
      TURNSTREAM_TOPIC_PREFIX: prefix,
      CLICKHOUSE_TABLE_PREFIX: prefix.replace(/[^A-Za-z0-9_]/g, '_'),
      TURNSTREAM_HOME: dir,
      LOG_LEVEL: 'info',
    };
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function turnstream(...args: string[]): Promise<Ran> {
    try {
      const { stdout, stderr } = await exec(process.execPath, ['bin/turnstream.js', ...args], {
        cwd: REPO_ROOT,
        env,
        maxBuffer: 64 << 20,
        timeout: 300_000,
      });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code?: number; stdout?: string; stderr?: string };
      return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
    }
  }

  /** stdout is one line holding one JSON object; returns it. */
  function oneObject(r: Ran, what: string): Record<string, unknown> {
    assert.equal(r.code, 0, `${what} failed: ${r.stderr.slice(-2000)}`);
    const lines = r.stdout.split('\n').filter((l) => l.trim() !== '');
    assert.equal(lines.length, 1, `${what}: stdout has ${lines.length} lines:\n${r.stdout.slice(0, 2000)}`);
    const v: unknown = JSON.parse(lines[0]);
    assert.ok(v !== null && typeof v === 'object' && !Array.isArray(v), `${what}: not an object`);
    return v as Record<string, unknown>;
  }

  it('infra status, import, replay, report, bench, eval and openclaw install-plugin', async () => {
    const status = oneObject(await turnstream('infra', 'status', '--json'), 'infra status');
    assert.equal((status.kafka as { up: boolean }).up, true);

    const file = join(dir, 'history.jsonl');
    const line = (i: number) =>
      JSON.stringify({
        session_id: `j${i}`,
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: 'hello' },
          { role: 'user', content: 'thanks!' },
        ],
      });
    await writeFile(file, `${line(1)}\n${line(2)}\nnot json\n`);
    const imported = oneObject(await turnstream('import', file, '--format', 'openai-chat', '--json'), 'import');
    assert.deepEqual([imported.conversations, imported.imported, imported.nextStates, imported.rejected], [2, 2, 2, 1]);

    const replay = await turnstream('replay', '--from', '0', '--tag', 'json', '--json');
    const summary = oneObject(replay, 'replay');
    assert.equal((summary.pairs as { total: number }).total, 2);
    assert.match(replay.stderr, /"level":30/, 'the replay logged (to stderr)');

    const report = oneObject(await turnstream('report', '--json'), 'report');
    assert.ok('funnel' in report);

    const bench = oneObject(await turnstream('bench', 'streams', '--records', '100', '--json'), 'bench streams');
    assert.ok(typeof bench.ratio === 'number' && typeof bench.baseline === 'string');

    const evalRun = await turnstream(
      'eval',
      '--model',
      'builtin',
      '--interactions',
      '2',
      '--seeds',
      '1',
      '--only',
      'brief-bea',
      '--held-out',
      '0.03',
      '--held-out-samples',
      '1',
      '--batch-size',
      '2',
      '--out',
      join(dir, 'eval'),
      '--json',
    );
    const evaluated = oneObject(evalRun, 'eval');
    assert.equal(evaluated.personas, 1);

    const plugin = oneObject(
      await turnstream('openclaw', 'install-plugin', '--state', join(dir, 'openclaw'), '--json'),
      'openclaw install-plugin',
    );
    assert.equal(plugin.provider, 'turnstream');
  });

  it('an error is one line on stderr, exit 2 for bad input, also after tfjs is loaded', async () => {
    const cases: Array<[string[], RegExp]> = [
      [
        ['eval', '--personas', join(dir, 'no-such.json'), '--interactions', '1', '--seeds', '1', '--json'],
        /no such file: .*no-such\.json \(TS_ERR_INVALID_INPUT\)$/,
      ],
      [['bench', 'streams', '--recrods', '100', '--json'], /unknown option --recrods; this benchmark takes --records, --partitions/],
      [['bench', 'nope', '--json'], /unknown benchmark "nope"/],
      [['import', join(dir, 'no-such.jsonl'), '--format', 'openai-chat', '--json'], /no such file/],
    ];
    for (const [args, message] of cases) {
      const r = await turnstream(...args);
      assert.equal(r.code, 2, `${args.join(' ')} → ${r.code}: ${r.stderr.slice(-500)}`);
      assert.equal(r.stdout, '', 'nothing on stdout');
      const lines = r.stderr.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('eval: '));
      assert.equal(lines.length, 1, `${args.join(' ')}: one line, got:\n${r.stderr.slice(0, 1500)}`);
      assert.match(lines[0], message);
    }
  });
});

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { progressReporter } from '../../../../cli/commands/model.ts';
import { writeTinyModel } from '../../../../policy/gguf/tiny-model.ts';
import { startFileServer, type FileServer } from '../../../support/file-server.ts';
import { suiteTempDir } from '../../../support/temp-dir.ts';

const BIN = new URL('../../../../bin/turnstream.js', import.meta.url).pathname;

describe('turnstream model', () => {
  const dir = suiteTempDir('ts-model-cli-');
  let server: FileServer;
  let gguf: Buffer;
  before(async () => {
    await writeTinyModel(join(dir(), 'tiny.gguf'), { seed: 3 });
    gguf = await readFile(join(dir(), 'tiny.gguf'));
    server = await startFileServer();
    server.routes.set('/org/repo/resolve/main/tiny.gguf', { body: gguf });
  });
  after(async () => {
    await server.close();
  });

  const run = (args: string[]) =>
    promisify(execFile)(process.execPath, [BIN, 'model', ...args], {
      env: { ...process.env, TURNSTREAM_HOME: dir(), HF_ENDPOINT: server.url, LOG_LEVEL: 'silent' },
    });

  it('pull --json prints exactly one JSON object on stdout, progress lines on stderr; list shows the file', async () => {
    const { stdout, stderr } = await run(['pull', 'hf:org/repo/tiny.gguf', '--json']);
    const lines = stdout.trim().split('\n');
    assert.equal(lines.length, 1);
    const pulled = JSON.parse(lines[0]) as Record<string, unknown>;
    assert.equal(pulled.path, join(dir(), 'models', 'hf', 'org', 'repo', 'main', 'tiny.gguf'));
    assert.equal(pulled.source, 'hf');
    assert.equal(pulled.downloaded, true);
    assert.equal(typeof pulled.ms, 'number');
    assert.match(stderr, /hf:org\/repo\/tiny.gguf@main: download 100% /);

    const listed = JSON.parse((await run(['list', '--json'])).stdout) as {
      cacheDir: string;
      models: Array<{ name: string; cached: boolean }>;
    };
    assert.equal(listed.cacheDir, join(dir(), 'models'));
    assert.deepEqual(
      listed.models.map((m) => [m.name, m.cached]),
      [
        ['builtin', true],
        ['smollm2-135m', false],
        ['hf:org/repo/tiny.gguf@main', true],
      ],
    );
  });

  it('an unknown model is one line naming the known ones, exit code 1', async () => {
    const failed = await run(['pull', 'nope']).then(
      () => assert.fail('pull of an unknown model succeeded'),
      (err: { code: number; stderr: string; stdout: string }) => err,
    );
    assert.equal(failed.code, 1);
    assert.equal(failed.stdout, '');
    assert.match(failed.stderr, /^turnstream: unknown model "nope": known names are builtin, smollm2-135m.*\(TS_ERR_NOT_FOUND\)\n$/);
  });

  it('without a terminal, progress is a line per phase and per 10 %', () => {
    const written: string[] = [];
    const stream = { isTTY: false, write: (s: string) => written.push(s) } as unknown as NodeJS.WriteStream;
    const { onProgress, stop } = progressReporter(stream);
    for (let done = 0; done <= 1000; done += 50) onProgress({ phase: 'download', name: 'm', doneBytes: done * 1000, totalBytes: 1e6 });
    onProgress({ phase: 'extract', name: 'm', doneBytes: 2e6, totalBytes: 2e6 });
    stop();
    assert.equal(written[0], 'm: download 1.0 MB\n');
    assert.equal(written.filter((l) => l.startsWith('m: download ') && l.includes('%')).length, 11); // 0, 10, …, 100 %
    assert.deepEqual(written.slice(-2), ['m: extract 2.0 MB\n', 'm: extract 100% (2.0/2.0 MB)\n']);
  });
});

/**
 * The workspace the parent reads and writes for the agent: paths are relative, without `..`,
 * and no symlink may lead out, whatever a command left in it.
 */
import assert from 'node:assert/strict';
import { chmod, mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { confinePath, isInside, Workspace } from '../../../gym/sandbox/workspace.ts';
import { suiteTempDir } from '../../support/temp-dir.ts';

const rejects = (what: Promise<unknown>, code: string, message?: RegExp, why?: string) =>
  assert.rejects(what, (err: Error & { code?: string }) => {
    assert.equal(err.code, code, `${why ?? ''} ${err.message}`);
    if (message) assert.match(err.message, message);
    return true;
  });

describe('workspace paths (pure)', () => {
  it('keeps relative paths, dropping "." and empty parts', () => {
    assert.equal(confinePath('a.txt'), 'a.txt');
    assert.equal(confinePath('./d//e/./f.txt'), 'd/e/f.txt');
  });

  it('refuses absolute paths, "..", NUL and no path at all', () => {
    for (const bad of ['/etc/passwd', '../x', 'a/../../x', 'a/..', '..', 'a\0b', '', '.', './']) {
      assert.throws(
        () => confinePath(bad),
        (err: Error & { code?: string; param?: string }) => err.code === 'TS_ERR_INVALID_INPUT' && err.param === 'path',
        JSON.stringify(bad),
      );
    }
  });

  it('inside means the root or below it, not a sibling sharing its prefix', () => {
    assert.equal(isInside('/t/ws', '/t/ws'), true);
    assert.equal(isInside('/t/ws', '/t/ws/a'), true);
    assert.equal(isInside('/t/ws', '/t/ws2/a'), false);
    assert.equal(isInside('/t/ws', '/t'), false);
  });
});

describe('workspace files', () => {
  const root = suiteTempDir('ts-ws-test-');
  let outside: string;
  let ws: Workspace;
  before(async () => {
    outside = join(root(), 'outside');
    await mkdir(outside);
    await writeFile(join(outside, 'secret.txt'), 'host secret');
    ws = await Workspace.create(root());
  });

  it('sets up files from a { path: content } map, making folders, and reads them back', async () => {
    await ws.writeFiles({ 'low.txt': 'quiet words\n', 'deep/er/x.txt': 'x' });
    assert.equal(await ws.readFile('low.txt'), 'quiet words\n');
    assert.equal(await readFile(join(ws.dir, 'deep/er/x.txt'), 'utf8'), 'x');
    await ws.writeFile('low.txt', 'replaced');
    assert.equal(await ws.readFile('low.txt'), 'replaced');
  });

  it('a missing file is TS_ERR_NOT_FOUND; a folder is not a file; a big file is TS_ERR_TOO_LARGE', async () => {
    await rejects(ws.readFile('nope.txt'), 'TS_ERR_NOT_FOUND');
    await rejects(ws.readFile('deep'), 'TS_ERR_INVALID_INPUT', /not a file/);
    await ws.writeFile('big.txt', 'x'.repeat(100));
    await rejects(ws.readFile('big.txt', 99), 'TS_ERR_TOO_LARGE');
  });

  it('refuses symlinks that lead out, to read or to write through, and changes nothing outside', async () => {
    await symlink(join(outside, 'secret.txt'), join(ws.dir, 'abs-link'));
    await symlink('../../outside', join(ws.dir, 'rel-dir-link'));
    await symlink('/nonexistent/x', join(ws.dir, 'dangling'));
    await rejects(ws.readFile('abs-link'), 'TS_ERR_INVALID_INPUT', /leads out of the workspace/);
    await rejects(ws.readFile('rel-dir-link/secret.txt'), 'TS_ERR_INVALID_INPUT', /leads out/);
    await rejects(ws.readFile('rel-dir-link/missing.txt'), 'TS_ERR_INVALID_INPUT', /leads out/, 'not even whether it exists');
    await rejects(ws.writeFile('abs-link', 'pwned'), 'TS_ERR_INVALID_INPUT', /leads out/);
    await rejects(ws.writeFile('rel-dir-link/new.txt', 'pwned'), 'TS_ERR_INVALID_INPUT', /leads out/);
    await rejects(ws.writeFile('dangling', 'pwned'), 'TS_ERR_INVALID_INPUT', /leads out/);
    await rejects(ws.readFile('dangling'), 'TS_ERR_INVALID_INPUT', /leads out/);
    assert.equal(await readFile(join(outside, 'secret.txt'), 'utf8'), 'host secret');
    await assert.rejects(stat(join(outside, 'new.txt')), 'nothing made outside');
  });

  it('follows symlinks that stay inside', async () => {
    await ws.writeFile('real/target.txt', 'inside');
    await symlink('real/target.txt', join(ws.dir, 'in-link'));
    await symlink('real', join(ws.dir, 'in-dir'));
    assert.equal(await ws.readFile('in-link'), 'inside');
    await ws.writeFile('in-dir/other.txt', 'via link');
    assert.equal(await readFile(join(ws.dir, 'real/other.txt'), 'utf8'), 'via link');
  });

  it('a FIFO a command left does not hang the parent', async () => {
    execFileSync('mkfifo', [join(ws.dir, 'fifo')]);
    await rejects(ws.readFile('fifo'), 'TS_ERR_INVALID_INPUT', /not a file/);
    await assert.rejects(ws.writeFile('fifo', 'x'));
  });

  it('a working directory inside is confined too', async () => {
    assert.equal(await ws.sandboxDir(undefined, '/workspace'), '/workspace');
    assert.equal(await ws.sandboxDir('deep/er', '/workspace'), '/workspace/deep/er');
    await rejects(ws.sandboxDir('rel-dir-link', '/workspace'), 'TS_ERR_INVALID_INPUT');
    await rejects(ws.sandboxDir('low.txt', '/workspace'), 'TS_ERR_INVALID_INPUT', /not a folder/);
  });

  it('dispose removes it all, even a folder left without permissions, and then refuses use', async () => {
    const other = await Workspace.create(root());
    await other.writeFile('locked/inner/f.txt', 'x');
    await chmod(join(other.dir, 'locked'), 0o000);
    await other.dispose();
    await assert.rejects(stat(other.box));
    await other.dispose();
    await rejects(other.readFile('x'), 'TS_ERR_INVALID_INPUT', /disposed/);
  });
});

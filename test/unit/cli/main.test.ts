import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { REPO_ROOT } from '../../support/stack.ts';

const turnstream = (args: string[], env: Record<string, string>) =>
  spawnSync(process.execPath, ['bin/turnstream.js', ...args], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, ...env },
  });

describe('a command with a bad configuration or flag', () => {
  it('ends at once with exit code 2 and one line naming every bad variable, before touching Kafka', () => {
    const r = turnstream(['train'], { KAFKA_BROKERS: '127.0.0.1:1', TRAIN_BATCH_SIZE: 'abc', TRAIN_MAX_USER_SHARE: '2' });
    assert.equal(r.status, 2, r.stderr);
    assert.equal(r.stdout, '');
    assert.equal(
      r.stderr,
      'turnstream: invalid configuration: TRAIN_BATCH_SIZE="abc": expected an integer >= 1; TRAIN_MAX_USER_SHARE="2": expected a number > 0 and <= 1 (TS_ERR_INVALID_INPUT)\n',
    );
  });

  it('a bad flag ends the command the same way: one line with its code, no stack trace', () => {
    const r = turnstream(['sink', '--replay-tags', 'a b'], { KAFKA_BROKERS: '127.0.0.1:1' });
    assert.equal(r.status, 2, r.stderr);
    assert.equal(
      r.stderr,
      'turnstream: invalid flag: --replay-tags="a b": expected "all", "none" or tags (letters, digits, - and _) separated by commas (TS_ERR_INVALID_INPUT)\n',
    );
    const p = turnstream(['pretrain', '--names', 'lots'], {});
    assert.equal(p.status, 2, p.stderr);
    assert.equal(p.stderr, 'turnstream: --names must be shipped or many, not "lots" (TS_ERR_INVALID_INPUT)\n');
  });

  it('still shows the help', () => {
    const r = turnstream(['train', '--help'], { TRAIN_BATCH_SIZE: 'abc' });
    assert.equal(r.status, 0);
    assert.match(r.stdout, /--batch-size <n>/);
  });
});

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { analyticsFromConfig } from '../../../../cli/analytics-options.ts';
import { replayTagsFlag } from '../../../../cli/commands/sink.ts';
import { loadConfig } from '../../../../cli/config.ts';

describe('turnstream sink / report / dashboard: where analytics lives', () => {
  it('defaults to the turnstream database of the local ClickHouse', () => {
    const a = analyticsFromConfig(loadConfig({}, '/tmp'));
    assert.equal(a.database, 'turnstream');
    assert.equal(a.tablePrefix, '');
    assert.equal(a.username, undefined);
    assert.equal(a.password, undefined);
    assert.match(a.url ?? '', /^http:\/\/127\.0\.0\.1:8123/);
  });

  it('CLICKHOUSE_* settings', () => {
    const env = {
      CLICKHOUSE_URL: 'http://ch:8123',
      CLICKHOUSE_DATABASE: 'a',
      CLICKHOUSE_USER: 'u',
      CLICKHOUSE_PASSWORD: 'p',
      CLICKHOUSE_TABLE_PREFIX: 'x_',
    };
    const { password, ...rest } = analyticsFromConfig(loadConfig(env, '/tmp'));
    assert.deepEqual(rest, {
      url: 'http://ch:8123',
      database: 'a',
      username: 'u',
      tls: undefined,
      tablePrefix: 'x_',
    });
    // A Secret: the client gets its value, a log line would get its name.
    assert.equal(typeof password === 'object' ? password.reveal() : password, 'p');
    assert.equal(String(password), '[secret from CLICKHOUSE_PASSWORD]');
  });

  it('--replay-tags: all, or a list of tags; anything else names the flag', () => {
    assert.equal(replayTagsFlag('all'), 'all');
    assert.deepEqual(replayTagsFlag('none'), []);
    assert.deepEqual(replayTagsFlag('a,b-2'), ['a', 'b-2']);
    assert.throws(
      () => replayTagsFlag('a b'),
      (err: Error & { code?: string }) => err.code === 'TS_ERR_INVALID_INPUT' && /--replay-tags="a b"/.test(err.message),
    );
  });
});

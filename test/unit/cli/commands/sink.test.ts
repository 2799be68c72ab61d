import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { analyticsFromConfig } from '../../../../cli/commands/sink.ts';
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
    assert.deepEqual(analyticsFromConfig(loadConfig(env, '/tmp')), {
      url: 'http://ch:8123',
      database: 'a',
      username: 'u',
      password: 'p',
      tablePrefix: 'x_',
    });
  });
});

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { format, inspect } from 'node:util';
import { pino } from 'pino';
import { readSecretFile, Secret, TurnstreamError } from '../../../core/index.ts';

const VALUE = 'hunter2-very-secret';
const dir = mkdtempSync(join(tmpdir(), 'secret-'));

test('a secret prints as where it came from, never as itself: strings, JSON, inspect, format, pino', () => {
  const s = new Secret(VALUE, 'KAFKA_SASL_PASSWORD');
  assert.equal(s.reveal(), VALUE);
  const shown = '[secret from KAFKA_SASL_PASSWORD]';
  assert.equal(String(s), shown);
  assert.equal(`${s}`, shown);
  assert.equal(JSON.stringify({ sasl: { password: s } }), `{"sasl":{"password":"${shown}"}}`);
  assert.equal(inspect({ password: s }), `{ password: ${shown} }`);
  assert.ok(!format('%o %O %j %s', s, { s }, { s }, s).includes(VALUE));
  let logged = '';
  const logger = pino(
    { level: 'debug' },
    new Writable({
      write(chunk, _enc, done) {
        logged += String(chunk);
        done();
      },
    }),
  );
  logger.info({ options: { username: 'u', password: s }, err: new Error(`login with ${s} failed`) }, `password ${s}`);
  assert.match(logged, /\[secret from KAFKA_SASL_PASSWORD\]/);
  assert.ok(!logged.includes(VALUE), logged);
  assert.deepEqual(Object.keys(s), ['setting']);
});

test('a secret file: one line, its line break dropped; a missing or empty one is a setting error naming the variable and the path', () => {
  const file = join(dir, 'password');
  writeFileSync(file, `${VALUE}\n`);
  const s = readSecretFile(file, 'CLICKHOUSE_PASSWORD_FILE');
  assert.equal(s.reveal(), VALUE);
  assert.equal(s.setting, `CLICKHOUSE_PASSWORD_FILE=${file}`);

  const missing = join(dir, 'nope');
  assert.throws(
    () => readSecretFile(missing, 'KAFKA_SASL_PASSWORD_FILE'),
    (err: unknown) =>
      err instanceof TurnstreamError &&
      err.code === 'TS_ERR_INVALID_INPUT' &&
      err.param === 'KAFKA_SASL_PASSWORD_FILE' &&
      err.message === `KAFKA_SASL_PASSWORD_FILE=${missing}: cannot read it (ENOENT)`,
  );
  const empty = join(dir, 'empty');
  writeFileSync(empty, '\n');
  assert.throws(() => readSecretFile(empty, 'X_FILE'), /X_FILE=.*empty: the file is empty/);
});

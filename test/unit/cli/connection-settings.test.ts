import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../../cli/config.ts';
import { connectionReport, stackSecurity } from '../../../cli/connection-settings.ts';
import { TurnstreamError } from '../../../core/index.ts';

const dir = mkdtempSync(join(tmpdir(), 'connection-settings-'));
const ca = join(dir, 'ca.pem');
copyFileSync(fileURLToPath(new URL('../../fixtures/tls/ca.pem', import.meta.url)), ca);
const passwordFile = join(dir, 'kafka-password');
writeFileSync(passwordFile, 'from-a-file\n');
const load = (env: Record<string, string>) => loadConfig(env, dir);

function rejection(env: Record<string, string>): TurnstreamError {
  try {
    load(env);
  } catch (err) {
    assert.ok(err instanceof TurnstreamError);
    return err;
  }
  assert.fail(`accepted ${JSON.stringify(env)}`);
}

describe('secured connections in the settings', () => {
  it('none by default: plaintext Kafka, no registry login, Node’s roots', () => {
    const c = load({});
    assert.deepEqual(c.security, { kafka: undefined, registry: undefined });
    assert.equal(c.clickhouse.password, undefined);
  });

  it('a SASL user means SASL_SSL with SCRAM-SHA-512 unless told otherwise; the password from its variable or its file', () => {
    const direct = load({ KAFKA_SASL_USERNAME: 'svc', KAFKA_SASL_PASSWORD: 'from-the-env' }).security.kafka;
    assert.deepEqual(direct?.tls, {});
    assert.equal(direct?.sasl?.mechanism, 'scram-sha-512');
    assert.equal(direct?.sasl?.username, 'svc');
    assert.equal(direct?.sasl?.password.reveal(), 'from-the-env');
    assert.equal(direct?.sasl?.password.setting, 'KAFKA_SASL_PASSWORD');

    const filed = load({
      KAFKA_SASL_USERNAME: 'svc',
      KAFKA_SASL_PASSWORD_FILE: passwordFile,
      KAFKA_SASL_MECHANISM: 'PLAIN',
      KAFKA_TLS_CA_FILE: ca,
    }).security.kafka;
    assert.equal(filed?.sasl?.password.reveal(), 'from-a-file');
    assert.equal(filed?.sasl?.password.setting, `KAFKA_SASL_PASSWORD_FILE=${passwordFile}`);
    assert.equal(filed?.sasl?.mechanism, 'plain');
    assert.match(filed?.tls?.ca ?? '', /BEGIN CERTIFICATE/);
    assert.equal(filed?.tls?.setting, `KAFKA_TLS_CA_FILE=${ca}`);

    assert.deepEqual(load({ KAFKA_TLS_CA_FILE: ca }).security.kafka?.sasl, undefined, 'a CA alone: ssl');
    const sp = load({ KAFKA_SECURITY_PROTOCOL: 'sasl_plaintext', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'p' }).security.kafka;
    assert.equal(sp?.tls, undefined);
    assert.equal(sp?.sasl?.username, 'u');
  });

  it('the registry and ClickHouse: basic auth, a password file, a CA', () => {
    const c = load({
      SCHEMA_REGISTRY_USERNAME: 'reg',
      SCHEMA_REGISTRY_PASSWORD_FILE: passwordFile,
      SCHEMA_REGISTRY_CA_FILE: ca,
      CLICKHOUSE_USER: 'ch',
      CLICKHOUSE_PASSWORD: 'ch-pass',
      CLICKHOUSE_CA_FILE: ca,
    });
    assert.equal(c.security.registry?.username, 'reg');
    assert.equal(c.security.registry?.password?.reveal(), 'from-a-file');
    assert.equal(c.security.registry?.tls?.setting, `SCHEMA_REGISTRY_CA_FILE=${ca}`);
    assert.equal(c.clickhouse.password?.reveal(), 'ch-pass');
    assert.equal(c.clickhouse.tls?.setting, `CLICKHOUSE_CA_FILE=${ca}`);
    assert.deepEqual(stackSecurity(c).clickhouse, { username: 'ch', password: c.clickhouse.password, tls: c.clickhouse.tls });
  });

  it('every inconsistency is named in one error, and no password value is in it', () => {
    const err = rejection({
      KAFKA_SECURITY_PROTOCOL: 'sasl_ssl',
      KAFKA_SASL_MECHANISM: 'gssapi',
      SCHEMA_REGISTRY_PASSWORD: 'the-registry-secret',
      SCHEMA_REGISTRY_PASSWORD_FILE: passwordFile,
      CLICKHOUSE_PASSWORD_FILE: join(dir, 'missing'),
      CLICKHOUSE_CA_FILE: passwordFile,
    });
    assert.equal(err.code, 'TS_ERR_INVALID_INPUT');
    for (const named of [
      'KAFKA_SASL_MECHANISM="gssapi": expected one of plain, scram-sha-256, scram-sha-512',
      'KAFKA_SASL_USERNAME: required with KAFKA_SECURITY_PROTOCOL=sasl_ssl',
      'set SCHEMA_REGISTRY_PASSWORD or SCHEMA_REGISTRY_PASSWORD_FILE, not both',
      `CLICKHOUSE_PASSWORD_FILE=${join(dir, 'missing')}: cannot read it (ENOENT)`,
      `CLICKHOUSE_CA_FILE=${passwordFile}: no PEM certificate in it`,
    ]) {
      assert.ok(err.message.includes(named), `${named}\nin: ${err.message}`);
    }
    assert.ok(!err.message.includes('the-registry-secret') && !err.message.includes('from-a-file'));
    assert.match(rejection({ KAFKA_SASL_USERNAME: 'u' }).message, /KAFKA_SASL_PASSWORD: required with KAFKA_SASL_USERNAME/);
    assert.match(
      rejection({ KAFKA_SECURITY_PROTOCOL: 'ssl', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'p' }).message,
      /KAFKA_SASL_USERNAME: set, but KAFKA_SECURITY_PROTOCOL=ssl has no SASL login/,
    );
    assert.match(
      rejection({ KAFKA_SECURITY_PROTOCOL: 'plaintext', KAFKA_TLS_CA_FILE: ca }).message,
      /KAFKA_TLS_CA_FILE: set, but KAFKA_SECURITY_PROTOCOL=plaintext has no TLS/,
    );
    assert.match(rejection({ SCHEMA_REGISTRY_PASSWORD: 'x' }).message, /SCHEMA_REGISTRY_USERNAME: required with SCHEMA_REGISTRY_PASSWORD/);
  });

  it('doctor’s report says that a password is set, and from where; the whole configuration serializes without one', () => {
    const c = load({
      KAFKA_BROKERS: 'k1:9093,k2:9093',
      KAFKA_SASL_USERNAME: 'svc',
      KAFKA_SASL_PASSWORD: 'kafka-secret-value',
      KAFKA_TLS_CA_FILE: ca,
      SCHEMA_REGISTRY_URL: 'https://sr/apis/ccompat/v7',
      SCHEMA_REGISTRY_USERNAME: 'reg',
      SCHEMA_REGISTRY_PASSWORD_FILE: passwordFile,
      CLICKHOUSE_URL: 'https://ch:8443',
      CLICKHOUSE_PASSWORD: 'ch-secret-value',
    });
    assert.deepEqual(connectionReport(c), {
      kafka: {
        endpoint: 'k1:9093,k2:9093',
        protocol: 'SASL_SSL',
        user: 'svc (SCRAM-SHA-512)',
        password: 'set (KAFKA_SASL_PASSWORD)',
        trust: `KAFKA_TLS_CA_FILE=${ca}`,
      },
      registry: {
        endpoint: 'https://sr/apis/ccompat/v7',
        protocol: 'https',
        user: 'reg',
        password: `set (SCHEMA_REGISTRY_PASSWORD_FILE=${passwordFile})`,
        trust: "Node's default roots",
      },
      clickhouse: {
        endpoint: 'https://ch:8443',
        protocol: 'https',
        user: undefined,
        password: 'set (CLICKHOUSE_PASSWORD)',
        trust: "Node's default roots",
      },
    });
    const json = JSON.stringify(c);
    for (const secret of ['kafka-secret-value', 'from-a-file', 'ch-secret-value']) assert.ok(!json.includes(secret), secret);
  });
});

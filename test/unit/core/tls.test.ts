import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { readCaFile, TurnstreamError, untrustedCertificate } from '../../../core/index.ts';
import { assertSettingError } from '../../support/setting-error.ts';

const dir = mkdtempSync(join(tmpdir(), 'tls-'));
/** A CA certificate (its key thrown away when it was made). */
const CERT = readFileSync(new URL('../../fixtures/tls/ca.pem', import.meta.url), 'utf8');

test('a CA file: its PEM and the setting that named it; a file without a certificate, or unreadable, is a setting error', () => {
  const file = join(dir, 'ca.pem');
  writeFileSync(file, 'garbage\n');
  assert.throws(
    () => readCaFile(file, 'KAFKA_TLS_CA_FILE'),
    (err: unknown) => err instanceof TurnstreamError && err.param === 'KAFKA_TLS_CA_FILE' && /no PEM certificate in it/.test(err.message),
  );
  assert.throws(
    () => readCaFile(join(dir, 'missing.pem'), 'CLICKHOUSE_CA_FILE'),
    /CLICKHOUSE_CA_FILE=.*missing\.pem: cannot read it \(ENOENT\)/,
  );
  const lines = CERT.split('\n');
  lines[3] = lines[3].replace(/[A-Za-z]/g, (c) => (c === 'A' ? 'B' : 'A'));
  writeFileSync(file, lines.join('\n'));
  assert.throws(() => readCaFile(file, 'SCHEMA_REGISTRY_CA_FILE'), /not a valid certificate/);
  const real = join(dir, 'real.pem');
  writeFileSync(real, CERT);
  const tls = readCaFile(real, 'SCHEMA_REGISTRY_CA_FILE');
  assert.match(tls.ca ?? '', /BEGIN CERTIFICATE/);
  assert.equal(tls.setting, `SCHEMA_REGISTRY_CA_FILE=${real}`);
});

test('a certificate the client refuses is told from an outage, found through the causes, and names what to set', () => {
  const nested = {
    name: 'KafkaJSNumberOfRetriesExceeded',
    cause: { name: 'KafkaJSConnectionError', code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', message: 'unable to verify the first certificate' },
  };
  const withCa = untrustedCertificate(nested, 'Kafka at k:9093', { ca: 'PEM', setting: 'KAFKA_TLS_CA_FILE=/etc/ca.pem' });
  assertSettingError(
    withCa,
    'KAFKA_TLS_CA_FILE',
    'Kafka at k:9093 has a TLS certificate this client does not trust (unable to verify the first certificate): it is not signed by the CA in KAFKA_TLS_CA_FILE=/etc/ca.pem',
  );
  const roots = untrustedCertificate(
    { code: 'SELF_SIGNED_CERT_IN_CHAIN', message: 'self-signed certificate in certificate chain' },
    'ClickHouse at https://ch',
    {
      setting: 'CLICKHOUSE_CA_FILE',
    },
  );
  assert.match(roots?.message ?? '', /Node's default roots do not trust it: set CLICKHOUSE_CA_FILE to the CA that signed it$/);
  const name = untrustedCertificate(
    { code: 'ERR_TLS_CERT_ALTNAME_INVALID', message: "Hostname/IP does not match certificate's altnames" },
    'x',
    undefined,
  );
  assert.match(name?.message ?? '', /not issued for that address/);
  assert.equal(name?.param, undefined);
  assert.equal(untrustedCertificate({ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED' }, 'x', undefined), undefined);
  assert.equal(untrustedCertificate(new Error('timeout'), 'x', undefined), undefined);
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Secret } from '../../../core/index.ts';
import { kafkaConfig, kafkaSecurityConfig, kafkaSettingError, securityProtocol, type KafkaSecurity } from '../../../streams/index.ts';
import { assertSettingError } from '../../support/setting-error.ts';

const password = new Secret('s3cr3t-value', 'KAFKA_SASL_PASSWORD_FILE=/run/secrets/kafka');
const sasl = { mechanism: 'scram-sha-256', username: 'svc', password } as const;

test("each security setting is Kafka's protocol and kafkajs' ssl and sasl options", () => {
  const cases: Array<[KafkaSecurity | undefined, string, unknown]> = [
    [undefined, 'PLAINTEXT', {}],
    [{ tls: {} }, 'SSL', { ssl: true }],
    [{ tls: { ca: 'PEM' } }, 'SSL', { ssl: { ca: ['PEM'] } }],
    [{ sasl }, 'SASL_PLAINTEXT', { sasl: { mechanism: 'scram-sha-256', username: 'svc', password: 's3cr3t-value' } }],
    [
      { tls: { ca: 'PEM' }, sasl },
      'SASL_SSL',
      { ssl: { ca: ['PEM'] }, sasl: { mechanism: 'scram-sha-256', username: 'svc', password: 's3cr3t-value' } },
    ],
  ];
  for (const [security, protocol, config] of cases) {
    assert.equal(securityProtocol(security), protocol);
    assert.deepEqual(kafkaSecurityConfig(security), config);
  }
  // The client factory's configuration carries them; the brokers and the rest stay as they were.
  const c = kafkaConfig({ brokers: ['b:9093'], security: { tls: {}, sasl } });
  assert.equal(c.ssl, true);
  assert.equal((c.sasl as { password: string }).password, 's3cr3t-value');
  assert.deepEqual(c.brokers, ['b:9093']);
});

test('a refused SASL login or an untrusted broker certificate is a setting error naming the setting; anything else is not', () => {
  // kafkajs wraps a refused login in its retrier's error.
  const refused = {
    name: 'KafkaJSNonRetriableError',
    cause: { name: 'KafkaJSSASLAuthenticationError', message: 'SASL SCRAM SHA256 authentication failed: Authentication failed' },
  };
  const e = kafkaSettingError(refused, 'b:9093', { tls: {}, sasl });
  assertSettingError(
    e,
    'KAFKA_SASL_PASSWORD_FILE',
    'Kafka at b:9093 refused the SASL login of user "svc" (SCRAM-SHA-256): wrong user, password or mechanism; check KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD_FILE and KAFKA_SASL_MECHANISM',
  );
  assert.ok(!e?.message.includes('s3cr3t'));

  const untrusted = {
    name: 'KafkaJSNumberOfRetriesExceeded',
    cause: { name: 'KafkaJSConnectionError', code: 'SELF_SIGNED_CERT_IN_CHAIN', message: 'self-signed certificate in certificate chain' },
  };
  assert.match(
    kafkaSettingError(untrusted, 'b:9093', { tls: {} })?.message ?? '',
    /Node's default roots do not trust it: set KAFKA_TLS_CA_FILE/,
  );
  assert.equal(
    kafkaSettingError({ name: 'KafkaJSConnectionError', message: 'Connection error: connect ECONNREFUSED' }, 'b:9093', { tls: {}, sasl }),
    undefined,
  );
  assert.equal(kafkaSettingError({ name: 'KafkaJSProtocolError', type: 'NOT_LEADER_OR_FOLLOWER' }, 'b:9093', undefined), undefined);
});

/**
 * What a secured local stack is made of, written once in its home: a CA of its own, one
 * certificate for every service (server and client use, for 127.0.0.1, localhost and the host),
 * and a random password per login. Files holding a key or a password are readable by the owner
 * only. The clients' side (`localSecurity`) is read back from the same files.
 */
import { createHash, pbkdf2Sync, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { readCaFile, readSecretFile } from '../core/index.ts';
import type { ResolvedStackOptions, StackEndpoints, StackSecurity } from './options.ts';
import { runCommand } from './run-command.ts';

/** The login every client of a secured local stack uses (Kafka, the registry, ClickHouse). */
export const SECURE_USER = 'turnstream';
/** The login Kafka's nodes use between themselves (SCRAM-SHA-512). */
export const BROKER_USER = 'broker';
/** SCRAM iterations of the stored credentials (Kafka's minimum is 4096). */
const SCRAM_ITERATIONS = 4096;

export interface SecurePaths {
  dir: string;
  caCert: string;
  caKey: string;
  /** The services' certificate, and its key; `keystore` holds both (Kafka's PEM keystore). */
  cert: string;
  key: string;
  keystore: string;
  /** The host the certificate was made for (a new host makes a new certificate). */
  certHost: string;
  kafkaPassword: string;
  brokerPassword: string;
  registryPassword: string;
  clickhousePassword: string;
}

export function securePaths(o: Pick<ResolvedStackOptions, 'home'>): SecurePaths {
  const dir = join(o.home, 'credentials');
  return {
    dir,
    caCert: join(dir, 'ca.pem'),
    caKey: join(dir, 'ca.key'),
    cert: join(dir, 'server.pem'),
    key: join(dir, 'server.key'),
    keystore: join(dir, 'server-keystore.pem'),
    certHost: join(dir, 'server.host'),
    kafkaPassword: join(dir, 'kafka-password'),
    brokerPassword: join(dir, 'broker-password'),
    registryPassword: join(dir, 'registry-password'),
    clickhousePassword: join(dir, 'clickhouse-password'),
  };
}

const writePrivate = (file: string, content: string): void => {
  writeFileSync(file, content, { mode: 0o600 });
  chmodSync(file, 0o600);
};

/** A password of 24 random characters (letters, digits, - and _: safe in every config format). */
const newPassword = (): string => randomBytes(18).toString('base64url');

/**
 * Writes the CA, the certificate and the passwords that are missing (with openssl); returns
 * true when it made anything. A certificate for another host is made again.
 */
export async function prepareSecurity(o: Pick<ResolvedStackOptions, 'home' | 'host'>, paths: SecurePaths): Promise<boolean> {
  mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
  let made = false;
  for (const file of [paths.kafkaPassword, paths.brokerPassword, paths.registryPassword, paths.clickhousePassword]) {
    if (!existsSync(file)) {
      writePrivate(file, `${newPassword()}\n`);
      made = true;
    }
  }
  if (!existsSync(paths.caCert) || !existsSync(paths.caKey)) {
    await makeCa({ key: paths.caKey, cert: paths.caCert, subject: 'turnstream local CA', days: 3650 }, 'making the local CA');
    chmodSync(paths.caKey, 0o600);
    rmSync(paths.cert, { force: true });
    made = true;
  }
  const hostStamp = existsSync(paths.certHost) ? readFileSync(paths.certHost, 'utf8').trim() : '';
  if (!existsSync(paths.cert) || !existsSync(paths.keystore) || hostStamp !== o.host) {
    await issueCertificate(o.host, paths);
    made = true;
  }
  return made;
}

/** Makes a self-signed CA (a P-256 key, and its certificate valid for `days`) with openssl. */
export async function makeCa(ca: { key: string; cert: string; subject: string; days: number }, what: string): Promise<void> {
  await openssl(
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      String(ca.days),
      '-subj',
      `/CN=${ca.subject}`,
      '-keyout',
      ca.key,
      '-out',
      ca.cert,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    what,
  );
}

/** The names a certificate for `host` lists: the host, and the loopback names every local client may use. */
export function subjectAltNames(host: string): string {
  const names = new Set([`IP:127.0.0.1`, 'DNS:localhost', isIP(host) ? `IP:${host}` : `DNS:${host}`]);
  return [...names].join(',');
}

async function issueCertificate(host: string, paths: SecurePaths): Promise<void> {
  const csr = join(paths.dir, 'server.csr');
  const ext = join(paths.dir, 'server.ext');
  await openssl(
    ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', '/CN=turnstream', '-keyout', paths.key, '-out', csr],
    'making the services key',
  );
  chmodSync(paths.key, 0o600);
  // Server and client use: Kafka's nodes present it to each other too (mutual TLS on the controller listener).
  writeFileSync(ext, `subjectAltName=${subjectAltNames(host)}\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n`);
  const serial = `0x${randomBytes(8).toString('hex')}`;
  await openssl(
    [
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      paths.caCert,
      '-CAkey',
      paths.caKey,
      '-set_serial',
      serial,
      '-days',
      '825',
      '-extfile',
      ext,
      '-out',
      paths.cert,
    ],
    'signing the services certificate',
  );
  rmSync(csr, { force: true });
  rmSync(ext, { force: true });
  writePrivate(paths.keystore, readFileSync(paths.key, 'utf8') + readFileSync(paths.cert, 'utf8'));
  writeFileSync(paths.certHost, `${host}\n`);
}

const openssl = (args: string[], what: string): Promise<string> => runCommand('openssl', args, { what, timeoutMs: 60_000 });

/** A password file's content (the line break dropped). */
export const readPassword = (file: string): string => readFileSync(file, 'utf8').trim();

/**
 * A SCRAM credential as `kafka-storage format --add-scram` takes it: salted, so no password is on
 * a command line; the salted password is as good as the password, so the caller keeps the
 * arguments out of messages.
 */
export function scramCredential(mechanism: 'SCRAM-SHA-256' | 'SCRAM-SHA-512', user: string, password: string): string {
  const salt = randomBytes(16);
  const sha512 = mechanism === 'SCRAM-SHA-512';
  const salted = pbkdf2Sync(password, salt, SCRAM_ITERATIONS, sha512 ? 64 : 32, sha512 ? 'sha512' : 'sha256');
  return `${mechanism}=[name=${user},salt="${salt.toString('base64')}",saltedpassword="${salted.toString('base64')}",iterations=${SCRAM_ITERATIONS}]`;
}

/** `password_sha256_hex` of ClickHouse's users.xml. */
export const sha256Hex = (s: string): string => createHash('sha256').update(s).digest('hex');

/** How the clients reach a secured local stack, read from its home (each secret naming its file). */
export function localSecurity(paths: SecurePaths): Required<StackSecurity> {
  const tls = (setting: string) => readCaFile(paths.caCert, setting);
  return {
    kafka: {
      tls: tls('KAFKA_TLS_CA_FILE'),
      sasl: {
        mechanism: 'scram-sha-512',
        username: SECURE_USER,
        password: readSecretFile(paths.kafkaPassword, 'KAFKA_SASL_PASSWORD_FILE'),
      },
    },
    registry: {
      username: SECURE_USER,
      password: readSecretFile(paths.registryPassword, 'SCHEMA_REGISTRY_PASSWORD_FILE'),
      tls: tls('SCHEMA_REGISTRY_CA_FILE'),
    },
    clickhouse: {
      username: SECURE_USER,
      password: readSecretFile(paths.clickhousePassword, 'CLICKHOUSE_PASSWORD_FILE'),
      tls: tls('CLICKHOUSE_CA_FILE'),
    },
  };
}

/**
 * The settings a service needs to reach a secured local stack, as `infra up --secure` prints
 * them: every secret as a `_FILE` path, never its value.
 */
export function secureSettings(paths: SecurePaths, endpoints: StackEndpoints): Record<string, string> {
  return {
    KAFKA_BROKERS: endpoints.brokers,
    KAFKA_SECURITY_PROTOCOL: 'sasl_ssl',
    KAFKA_SASL_MECHANISM: 'scram-sha-512',
    KAFKA_SASL_USERNAME: SECURE_USER,
    KAFKA_SASL_PASSWORD_FILE: paths.kafkaPassword,
    KAFKA_TLS_CA_FILE: paths.caCert,
    SCHEMA_REGISTRY_URL: endpoints.registryUrl,
    SCHEMA_REGISTRY_USERNAME: SECURE_USER,
    SCHEMA_REGISTRY_PASSWORD_FILE: paths.registryPassword,
    SCHEMA_REGISTRY_CA_FILE: paths.caCert,
    CLICKHOUSE_URL: endpoints.clickhouseUrl,
    CLICKHOUSE_USER: SECURE_USER,
    CLICKHOUSE_PASSWORD_FILE: paths.clickhousePassword,
    CLICKHOUSE_CA_FILE: paths.caCert,
  };
}

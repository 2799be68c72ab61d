/**
 * The Schema Registry: Apicurio Registry 3.x (a Quarkus app from Maven Central), whose
 * Confluent-compatible API at `/apis/ccompat/v7` is what `@confluentinc/schemaregistry`
 * talks to. With storage `kafkasql` its state is the `kafkasql-journal` topic.
 */
import { chmodSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { httpGet } from '../core/index.ts';
import type { ResolvedStackOptions } from './options.ts';
import { runCommand } from './run-command.ts';
import { readPassword, SECURE_USER, securePaths } from './secure.ts';
import { registryReady, type RegistrySecurity } from '../schemas/index.ts';

export const APICURIO_VERSION = '3.0.9';
export const APICURIO_ARTIFACT = `io.apicurio:apicurio-registry-app:${APICURIO_VERSION}:tar.gz:all`;

/** Where the registry pieces live. */
export interface RegistryPaths {
  appDir: string;
  runnerJar: string;
  dataDir: string;
  /** A secured registry's passwords (its user's, its Kafka login's), owner-only. */
  secretsFile: string;
  stdoutLog: string;
  pidFile: string;
}

export function registryPaths(o: Pick<ResolvedStackOptions, 'home' | 'distDir'>): RegistryPaths {
  const appDir = join(o.distDir, 'apicurio', APICURIO_VERSION);
  return {
    appDir,
    runnerJar: join(appDir, `apicurio-registry-app-${APICURIO_VERSION}-runner.jar`),
    dataDir: join(o.home, 'registry'),
    secretsFile: join(o.home, 'registry', 'secrets.properties'),
    stdoutLog: join(o.home, 'logs', 'registry.log'),
    pidFile: join(o.home, 'pids', 'registry.pid'),
  };
}

/** Fetches the app with Maven (from ~/.m2 when already there) and unpacks it, once. */
export async function installRegistry(o: ResolvedStackOptions, paths: RegistryPaths): Promise<boolean> {
  if (existsSync(paths.runnerJar)) return false;
  const downloads = join(o.distDir, 'downloads');
  mkdirSync(downloads, { recursive: true });
  // dependency:copy resolves into ~/.m2 (a no-op when cached) and copies the file where we want it.
  await runCommand(
    o.mavenBinary,
    ['-q', '-B', 'dependency:copy', `-Dartifact=${APICURIO_ARTIFACT}`, `-DoutputDirectory=${downloads}`, '-Dmdep.stripVersion=false'],
    {
      what: 'downloading Apicurio Registry with Maven',
    },
  );
  const tarball = join(downloads, `apicurio-registry-app-${APICURIO_VERSION}-all.tar.gz`);
  const partial = `${paths.appDir}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  await runCommand('tar', ['-xzf', tarball, '-C', partial], { what: 'unpacking Apicurio Registry' });
  // Rename last, so an interrupted unpack is never taken for an installed app.
  rmSync(paths.appDir, { recursive: true, force: true });
  await runCommand('mv', [partial, paths.appDir], { what: 'installing Apicurio Registry' });
  rmSync(tarball, { force: true });
  return true;
}

/**
 * Quarkus/Apicurio settings as -D flags (system properties outrank the environment, so a
 * stray QUARKUS_* variable cannot move the port). Apicurio 3 has no "mem" storage kind:
 * its default `sql` storage on an in-memory H2 database is the in-memory mode.
 */
export function registrySystemProperties(
  o: Pick<ResolvedStackOptions, 'host' | 'registryPort' | 'registryStorage' | 'secure' | 'home'>,
  brokers: string,
  dataDir: string,
): Record<string, string> {
  const props: Record<string, string> = {
    'quarkus.http.host': o.host,
    'quarkus.http.port': String(o.registryPort),
    'quarkus.http.access-log.enabled': 'false',
    'apicurio.storage.snapshot.location': join(dataDir, 'snapshots'),
  };
  if (o.secure) {
    const tls = securePaths(o);
    Object.assign(props, {
      // https only: the plain port is not opened.
      'quarkus.http.port': '0',
      'quarkus.http.ssl-port': String(o.registryPort),
      'quarkus.http.insecure-requests': 'disabled',
      'quarkus.http.ssl.certificate.files': tls.cert,
      'quarkus.http.ssl.certificate.key-files': tls.key,
      // Basic auth against Quarkus' own users (built into Apicurio 3's app), on every path but the
      // health checks; no identity server needed. Apicurio's own role checks stay off.
      'quarkus.http.auth.basic': 'true',
      'quarkus.security.users.embedded.enabled': 'true',
      'quarkus.security.users.embedded.plain-text': 'true',
      'quarkus.http.auth.permission.login.paths': '/*',
      'quarkus.http.auth.permission.login.policy': 'authenticated',
      'quarkus.http.auth.permission.health.paths': '/health/*',
      'quarkus.http.auth.permission.health.policy': 'permit',
      // Its kafkasql storage logs into Kafka like any client.
      'apicurio.kafka.common.security.protocol': 'SASL_SSL',
      'apicurio.kafka.common.sasl.mechanism': 'SCRAM-SHA-512',
      'apicurio.kafka.common.ssl.truststore.type': 'PEM',
      'apicurio.kafka.common.ssl.truststore.location': tls.caCert,
    });
  }
  if (o.registryStorage === 'kafkasql') {
    Object.assign(props, {
      'apicurio.storage.kind': 'kafkasql',
      'apicurio.kafkasql.bootstrap.servers': brokers,
      'apicurio.kafkasql.topic': 'kafkasql-journal',
      'apicurio.kafkasql.snapshots.topic': 'kafkasql-snapshots',
    });
  } else {
    Object.assign(props, { 'apicurio.storage.kind': 'sql', 'apicurio.storage.sql.kind': 'h2' });
  }
  return props;
}

/**
 * The passwords of a secured registry, in a file Quarkus reads (`quarkus.config.locations`) rather
 * than on its command line, which every local user can see.
 */
export function registrySecrets(o: Pick<ResolvedStackOptions, 'home'>): string {
  const s = securePaths(o);
  const jaas = `org.apache.kafka.common.security.scram.ScramLoginModule required username="${SECURE_USER}" password="${readPassword(s.kafkaPassword)}";`;
  return [
    `quarkus.security.users.embedded.users.${SECURE_USER}=${readPassword(s.registryPassword)}`,
    `apicurio.kafka.common.sasl.jaas.config=${jaas}`,
    '',
  ].join('\n');
}

/** Writes a secured registry's secrets file (owner-only); nothing for a plain one. */
export function prepareRegistry(o: Pick<ResolvedStackOptions, 'home' | 'secure'>, paths: RegistryPaths): void {
  if (!o.secure) return;
  mkdirSync(paths.dataDir, { recursive: true });
  writeFileSync(paths.secretsFile, registrySecrets(o), { mode: 0o600 });
  chmodSync(paths.secretsFile, 0o600);
}

/** The java command line of the registry. */
export function registryCommand(o: ResolvedStackOptions, paths: RegistryPaths, brokers: string): { command: string; args: string[] } {
  const props = registrySystemProperties(o, brokers, paths.dataDir);
  if (o.secure) props['quarkus.config.locations'] = paths.secretsFile;
  return {
    command: o.javaBinary,
    args: [...o.registryJvmOptions, ...Object.entries(props).map(([k, v]) => `-D${k}=${v}`), '-jar', paths.runnerJar],
  };
}

/** True when the ccompat API lists subjects and the registry says it is ready (`registryReady`). */
export async function registryHealthy(registryUrl: string, timeoutMs = 3_000, security?: RegistrySecurity): Promise<boolean> {
  try {
    const res = await httpGet(`${registryUrl}/subjects`, { ...security, timeoutMs });
    return res.status === 200 && (await registryReady(registryUrl, timeoutMs, security));
  } catch {
    return false;
  }
}

/**
 * Registers turnstream's schemas with a Confluent-compatible registry (Apicurio's ccompat
 * API here) under the TopicNameStrategy, with BACKWARD compatibility.
 *
 * Idempotent under concurrency: services starting together race to set a subject's
 * compatibility, and Apicurio answers all but the first with a conflict ("A rule named
 * 'COMPATIBILITY' already exists"); a conflict is read as "set by another", checked, and a
 * conflicting registration is retried (it then returns the existing schema's id).
 */
import type { Client } from '@confluentinc/schemaregistry';
import { Agent } from 'node:https';
import { createRequire } from 'node:module';
import { ErrorCodes, TurnstreamError, httpGet, retry, untrustedCertificate, type Secret, type TlsOptions } from '../core/index.ts';
import { TOPICS, topicName, valueSubject, type TopicId, type TopicNaming } from './topics.ts';

/** How a client reaches a secured registry: basic auth, and whom it trusts over https. */
export interface RegistrySecurity {
  /** Basic auth user (SCHEMA_REGISTRY_USERNAME). @default none */
  username?: string;
  /** Basic auth password (SCHEMA_REGISTRY_PASSWORD[_FILE]). @default none */
  password?: Secret;
  /** Whom to trust over https (SCHEMA_REGISTRY_CA_FILE). @default Node's roots */
  tls?: TlsOptions;
}

export interface RegistryOptions {
  /** e.g. http://127.0.0.1:8081/apis/ccompat/v7 */
  url: string;
  /** Retries of each registry call. @default 3 */
  maxRetries?: number;
  /** Basic auth and TLS trust. @default none (Node's roots over https) */
  security?: RegistrySecurity;
}

// The registry client (and the axios and protobuf it brings) is loaded with the first client made,
// not with schemas/index.ts, which every command loads through its configuration: it alone costs
// more than the whole start of `turnstream doctor`.
let registryModule: typeof import('@confluentinc/schemaregistry') | undefined;
const registryClient = (): typeof import('@confluentinc/schemaregistry') =>
  (registryModule ??= createRequire(import.meta.url)('@confluentinc/schemaregistry') as typeof import('@confluentinc/schemaregistry'));

/** The security each client made here was given, for its later checks (readiness, refusals). */
const made = new WeakMap<Client, RegistrySecurity>();

export function createRegistryClient(options: RegistryOptions): Client {
  const s = options.security;
  const client = new (registryClient().SchemaRegistryClient)({
    baseURLs: [options.url],
    maxRetries: options.maxRetries ?? 3,
    retriesWaitMs: 200,
    retriesMaxWaitMs: 2000,
    cacheCapacity: 1000,
    ...(s?.username !== undefined
      ? { basicAuthCredentials: { credentialsSource: 'USER_INFO', userInfo: `${s.username}:${s.password?.reveal() ?? ''}` } }
      : {}),
    ...(s?.tls?.ca ? { createAxiosDefaults: { httpsAgent: new Agent({ ca: s.tls.ca, keepAlive: true }) } } : {}),
  });
  made.set(client, s ?? {});
  return client;
}

/** The security a client of {@link createRegistryClient} was made with. */
export const securityOf = (client: Client): RegistrySecurity => made.get(client) ?? {};

/**
 * When `err`, from a registry call, is a failure no retry can fix: basic auth refused (401) or
 * a certificate this client does not trust, as a TS_ERR_INVALID_INPUT naming the setting; else
 * undefined.
 */
export function registrySettingError(err: unknown, url: string, s: RegistrySecurity | undefined): TurnstreamError | undefined {
  const status = (err as { status?: number } | undefined)?.status;
  if (status === 401) {
    const who = s?.username !== undefined ? `user "${s.username}"` : 'no user (SCHEMA_REGISTRY_USERNAME is unset)';
    const setting = (s?.password?.setting ?? 'SCHEMA_REGISTRY_PASSWORD').split('=')[0];
    return new TurnstreamError(
      ErrorCodes.INVALID_INPUT,
      `the Schema Registry at ${url} refused the login of ${who} (401): check SCHEMA_REGISTRY_USERNAME and ${setting}`,
      { param: setting, retriable: false, cause: err },
    );
  }
  return untrustedCertificate(err, `the Schema Registry at ${url}`, { ...s?.tls, setting: s?.tls?.setting ?? 'SCHEMA_REGISTRY_CA_FILE' });
}

/**
 * Whether the registry says it is ready, where it has a readiness check: Apicurio's
 * `/health/ready` answers 503 while its `kafkasql` storage reads its journal back after a
 * restart, and meanwhile lists subjects but answers 404 for schema ids it has not read yet. A
 * registry without that endpoint (Confluent's answers 404 there) counts as ready.
 */
export async function registryReady(registryUrl: string, timeoutMs = 3_000, security?: RegistrySecurity): Promise<boolean> {
  try {
    const res = await httpGet(`${new URL(registryUrl).origin}/health/ready`, { ...security, timeoutMs });
    return res.status !== 503;
  } catch {
    return false;
  }
}

/** Schema ids by topic id, for the topics that were registered. */
export type SchemaIds = Partial<Record<TopicId, number>>;

/** Sets BACKWARD compatibility and registers each topic's value schema; idempotent. */
export async function registerSchemas(
  client: Client,
  naming: TopicNaming = {},
  ids: readonly TopicId[] = Object.keys(TOPICS) as TopicId[],
): Promise<SchemaIds> {
  const out: SchemaIds = {};
  // One subject after the other: registered side by side, eight processes starting at once got different ids.
  const onConflict = { attempts: 6, baseMs: 100, retryIf: isConflict };
  for (const id of ids) {
    const subject = valueSubject(topicName(id, naming));
    const schema = JSON.stringify(TOPICS[id].schema());
    try {
      await retry(() => ensureBackward(client, subject), onConflict);
      out[id] = await retry(() => client.register(subject, { schemaType: 'AVRO', schema }, false), onConflict);
    } catch (err) {
      throw (
        registrySettingError(err, client.config().baseURLs[0] ?? '', securityOf(client)) ??
        new TurnstreamError(ErrorCodes.UNAVAILABLE, `could not register ${subject}: ${(err as Error).message}`, { cause: err })
      );
    }
  }
  return out;
}

/** A registry's answer that another writer got there first (HTTP 409, or Apicurio's "already exists"). */
function isConflict(err: unknown): boolean {
  const e = err as { status?: number; message?: string };
  return e.status === 409 || /already exists|conflict/i.test(e.message ?? '');
}

/** Sets the subject's compatibility to BACKWARD unless it is; a concurrent setter's conflict counts as done once read back. */
async function ensureBackward(client: Client, subject: string): Promise<void> {
  const { Compatibility } = registryClient();
  const current = await client.getCompatibility(subject).catch(() => undefined);
  if (current === Compatibility.BACKWARD) return;
  try {
    await client.updateCompatibility(subject, Compatibility.BACKWARD);
  } catch (err) {
    if (!isConflict(err)) throw err;
    // Another process created the rule meanwhile: fine if it says BACKWARD; else set it again.
    if ((await client.getCompatibility(subject).catch(() => undefined)) !== Compatibility.BACKWARD) throw err;
  }
}

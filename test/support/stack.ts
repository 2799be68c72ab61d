/**
 * The real services for integration and e2e tests. Which ones (`TURNSTREAM_TEST_STACK`):
 *
 * - endpoints given — KAFKA_BROKERS, SCHEMA_REGISTRY_URL and CLICKHOUSE_URL all set (a CI
 *   service, a docker-compose stack from infra/docker-compose.yml): those are used and only
 *   health-checked; nothing starts, whatever the mode;
 * - `native`: the native stack under `<repo>/.turnstream` is started on the default ports, or
 *   reused when it runs already (a service whose endpoint is given is only health-checked);
 * - `containers`: Kafka, the registry and ClickHouse in containers (test/support/containers.ts),
 *   one set per test process (kept and shared with TESTCONTAINERS_REUSE_ENABLE=true); an
 *   error when no Docker engine answers;
 * - `auto` (the default): `containers` when a Docker engine answers `GET /_ping` within 1.5 s,
 *   else `native`. With no Docker socket on disk the check costs a few `stat`s.
 *
 * The native stack is shared by every test file (a cold start costs ~30 s), so a test run
 * does not stop it; `.ci/run` stops what it started, and `turnstream infra down` does by hand.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { loadConfig, type TurnstreamConfig } from '../../cli/config.ts';
import { clickhouseVersion, kafkaHealthy, registryHealthy, stackUp, type StackEndpoints } from '../../infra/index.ts';
import { ErrorCodes, TurnstreamError } from '../../core/errors.ts';
import { detectDockerEngine, noDockerEngineError, startContainers, type DockerEngine, type DockerProbe } from './containers.ts';

/** The repository root (test/support/../..). */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export type TestStackMode = 'auto' | 'native' | 'containers';

/** Endpoints given in the environment; each one given is used instead of starting that service. */
export interface GivenEndpoints {
  kafkaBrokers: string | undefined;
  schemaRegistryUrl: string | undefined;
  clickhouseUrl: string | undefined;
}

/** What provides the services that are not given. */
export type StackSelection =
  | { provider: 'given'; reason: string }
  | { provider: 'native'; reason: string }
  | { provider: 'containers'; engine: DockerEngine; reason: string };

/** `TURNSTREAM_TEST_STACK`, checked: unset or empty is `auto`. */
export function parseTestStackMode(value: string | undefined): TestStackMode {
  const v = (value ?? '').trim().toLowerCase();
  if (v === '') return 'auto';
  if (v === 'auto' || v === 'native' || v === 'containers') return v;
  throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `TURNSTREAM_TEST_STACK must be auto, native or containers, not "${value}"`, {
    param: 'TURNSTREAM_TEST_STACK',
  });
}

/**
 * Chooses the stack. All three endpoints given → `given`, and no engine is looked for. Else
 * `native` and `containers` are taken at their word (`containers` without an engine is an
 * error), and `auto` asks `detect` (a Docker engine within a short bound).
 */
export async function selectTestStack(
  mode: TestStackMode,
  given: GivenEndpoints,
  detect: () => Promise<DockerProbe> = () => detectDockerEngine(),
): Promise<StackSelection> {
  if (given.kafkaBrokers && given.schemaRegistryUrl && given.clickhouseUrl) {
    return { provider: 'given', reason: 'KAFKA_BROKERS, SCHEMA_REGISTRY_URL and CLICKHOUSE_URL are set' };
  }
  if (mode === 'native') return { provider: 'native', reason: 'TURNSTREAM_TEST_STACK=native' };
  const probe = await detect();
  if (probe.engine) {
    return {
      provider: 'containers',
      engine: probe.engine,
      reason: `Docker engine at ${probe.engine.dockerHost} (TURNSTREAM_TEST_STACK=${mode})`,
    };
  }
  if (mode === 'containers') throw noDockerEngineError(probe);
  return { provider: 'native', reason: 'no Docker engine answers (TURNSTREAM_TEST_STACK=auto)' };
}

/** The configuration, the endpoints it gives and the stack chosen for the rest, from the environment. */
async function selectFromEnvironment(): Promise<{ config: TurnstreamConfig; given: GivenEndpoints; selection: StackSelection }> {
  // loadConfig also loads `.env` into process.env, so the two switches below may come from there.
  const config = loadConfig(process.env, REPO_ROOT);
  const given: GivenEndpoints = {
    kafkaBrokers: config.kafkaBrokers,
    schemaRegistryUrl: config.schemaRegistryUrl,
    clickhouseUrl: config.clickhouseUrl,
  };
  const selection = await selectTestStack(parseTestStackMode(process.env.TURNSTREAM_TEST_STACK), given);
  return { config, given, selection };
}

/** Whether started containers are kept for the next run (`TESTCONTAINERS_REUSE_ENABLE=true`). */
const reuseContainers = (): boolean => process.env.TESTCONTAINERS_REUSE_ENABLE === 'true';

let stack: Promise<StackEndpoints> | undefined;

/** Endpoints of a healthy Kafka, Schema Registry (ccompat URL) and ClickHouse. */
export function ensureStack(): Promise<{ brokers: string; registryUrl: string; clickhouseUrl: string }> {
  stack ??= (async () => {
    const { config, given, selection } = await selectFromEnvironment();
    if (selection.provider === 'containers') return containerStack(selection, given, reuseContainers());
    const result = await stackUp({
      home: config.home,
      kafkaBrokers: config.kafkaBrokers,
      schemaRegistryUrl: config.schemaRegistryUrl,
      clickhouseUrl: config.clickhouseUrl,
      onProgress: (p) => {
        // Quiet when everything is reused; show the slow path so a waiting test explains itself.
        if (!p.message.startsWith('reusing') && !p.message.startsWith('using')) {
          process.stderr.write(`# stack ${p.service}: ${p.message}\n`);
        }
      },
    });
    return { brokers: result.brokers, registryUrl: result.registryUrl, clickhouseUrl: result.clickhouseUrl };
  })();
  return stack;
}

/**
 * For `npm test` (bin/run-tests.js), before any test file starts: when the tests would run on
 * containers, starts them once for the whole run and returns the endpoints to hand to every
 * test process as given ones (each file is a process of its own and would otherwise start its
 * own three containers). Undefined when the native stack or given endpoints are used: those
 * are shared already.
 */
export async function startRunContainers(): Promise<{ env: Record<string, string>; stop: () => Promise<void> } | undefined> {
  const { given, selection } = await selectFromEnvironment();
  if (selection.provider !== 'containers') return undefined;
  const started = await containerStack(selection, given, reuseContainers());
  return {
    env: { KAFKA_BROKERS: started.brokers, SCHEMA_REGISTRY_URL: started.registryUrl, CLICKHOUSE_URL: started.clickhouseUrl },
    stop: started.stop,
  };
}

/** Containers for what is not given; what is given is health-checked, as `stackUp` does. */
async function containerStack(
  selection: Extract<StackSelection, { provider: 'containers' }>,
  given: GivenEndpoints,
  reuse: boolean,
): Promise<StackEndpoints & { stop: () => Promise<void> }> {
  process.stderr.write(`# stack: containers, ${selection.reason}\n`);
  const checks: Array<Promise<void>> = [];
  const check = (name: string, where: string, ok: () => Promise<boolean>): void => {
    checks.push(
      ok().then((up) => {
        if (!up) throw new TurnstreamError(ErrorCodes.UNAVAILABLE, `${name} at ${where} (given, so not started here) does not answer`);
      }),
    );
  };
  if (given.kafkaBrokers) check('Kafka', given.kafkaBrokers, () => kafkaHealthy(given.kafkaBrokers as string));
  if (given.schemaRegistryUrl) check('Schema Registry', given.schemaRegistryUrl, () => registryHealthy(given.schemaRegistryUrl as string));
  if (given.clickhouseUrl) {
    check('ClickHouse', given.clickhouseUrl, async () => (await clickhouseVersion(given.clickhouseUrl as string)) !== undefined);
  }
  // Given endpoints first (a few seconds at most), so a dead one fails before any container starts.
  await Promise.all(checks);
  const started = await startContainers({
    engine: selection.engine,
    services: { kafka: !given.kafkaBrokers, registry: !given.schemaRegistryUrl, clickhouse: !given.clickhouseUrl },
    // testcontainers' own switch, opted into: keep the containers for the next test file and run.
    reuse,
    onProgress: (m) => process.stderr.write(`# stack containers: ${m}\n`),
  });
  return {
    brokers: given.kafkaBrokers ?? (started.brokers as string),
    registryUrl: given.schemaRegistryUrl ?? (started.registryUrl as string),
    clickhouseUrl: given.clickhouseUrl ?? (started.clickhouseUrl as string),
    stop: () => started.stop(),
  };
}

/**
 * A topic (and consumer group, table…) prefix unique to one test file's run, e.g.
 * `t-session-assembler-1a2b3c.`, so test files and repeated runs never share topics.
 */
export function uniquePrefix(name: string): string {
  const slug =
    name
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 40) || 'test';
  return `t-${slug}-${randomBytes(3).toString('hex')}.`;
}

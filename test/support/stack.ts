/**
 * The real services for integration and e2e tests. With KAFKA_BROKERS, SCHEMA_REGISTRY_URL
 * and CLICKHOUSE_URL set (a CI service, a docker-compose stack from infra/docker-compose.yml),
 * those are used and only health-checked; otherwise the native stack under
 * `<repo>/.turnstream` is started on the default ports, or reused when it runs already.
 *
 * The native stack is shared by every test file (a cold start costs ~30 s), so a test run
 * does not stop it; `.ci/run` stops what it started, and `turnstream infra down` does by hand.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../cli/config.ts';
import { stackUp, type StackEndpoints } from '../../infra/index.ts';

/** The repository root (test/support/../..). */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

let stack: Promise<StackEndpoints> | undefined;

/** Endpoints of a healthy Kafka, Schema Registry (ccompat URL) and ClickHouse. */
export function ensureStack(): Promise<{ brokers: string; registryUrl: string; clickhouseUrl: string }> {
  stack ??= (async () => {
    const config = loadConfig(process.env, REPO_ROOT);
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

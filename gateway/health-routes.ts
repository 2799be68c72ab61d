/**
 * `GET /healthz` (the process answers) and `GET /readyz` (it should get traffic), both open.
 * `/readyz` answers 503 with its reasons while the engine is not loaded, the outbox cannot be
 * written, holds more than `readyMaxDepth` records, or has drained nothing for `stallMs` while
 * holding some (Kafka away that long): a load balancer then prefers an instance that can deliver
 * what it captures. The gateway keeps answering meanwhile; the outbox keeps every turn.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { OutboxStats } from '../streams/index.ts';
import type { Admission } from './admission.ts';
import { GATEWAY_DEFAULTS } from './defaults.ts';
import type { Engine } from './engine.ts';

export interface HealthDeps {
  engine: Pick<Engine, 'ready'>;
  admission: Pick<Admission, 'running' | 'waitingCount'>;
  /** The outbox's stats; undefined before the gateway has opened it. */
  outboxStats: () => OutboxStats | undefined;
  /** The last Kafka send succeeded (false without Kafka). */
  kafkaConnected: () => boolean;
  /** The policy version being served, when the engine has versions. */
  policyVersion: () => number | null;
  /** Not ready while the outbox holds more records than this. @default 10000 */
  readyMaxDepth?: number;
  /** Not ready while the outbox holds records and drained none for this long, ms. @default 60000 */
  stallMs?: number;
}

export const healthRoutes: FastifyPluginAsync<HealthDeps> = async (app, deps) => {
  const readyMaxDepth = deps.readyMaxDepth ?? GATEWAY_DEFAULTS.outboxReadyMaxDepth;
  const stallMs = deps.stallMs ?? GATEWAY_DEFAULTS.outboxStallMs;
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const ob = deps.outboxStats();
    const checks = {
      engine: deps.engine.ready(),
      kafka: deps.kafkaConnected(),
      outbox: ob?.healthy ?? false,
      outboxDepth: ob?.depth ?? 0,
      outboxStalledMs: ob?.stalledMs ?? 0,
      outboxDeadLetters: ob?.deadLettered ?? 0,
      generations: deps.admission.running,
      queued: deps.admission.waitingCount,
      policyVersion: deps.policyVersion(),
    };
    const problems = [
      ...(checks.engine ? [] : ['the engine is not loaded']),
      ...(checks.outbox ? [] : ['the outbox cannot be written']),
      ...(checks.outboxDepth > readyMaxDepth ? [`the outbox holds ${checks.outboxDepth} records (more than ${readyMaxDepth})`] : []),
      ...(checks.outboxStalledMs > stallMs ? [`the outbox has drained nothing for ${Math.round(checks.outboxStalledMs / 1000)} s`] : []),
    ];
    const ready = problems.length === 0;
    reply.code(ready ? 200 : 503);
    return { status: ready ? 'ready' : 'not ready', ...(ready ? {} : { reasons: problems }), ...checks };
  });
};

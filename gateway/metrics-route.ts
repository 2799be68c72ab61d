/**
 * `GET /metrics`: the gateway's Prometheus metrics (gateway/metrics.ts) in the text exposition
 * format, the outbox gauges read fresh. Who may read it is checked before (gateway/http-app.ts):
 * the metrics key when one is set, else an API key when keys are on.
 */
import type { FastifyPluginAsync } from 'fastify';
import type { Outbox } from '../streams/index.ts';
import type { GatewayMetrics } from './metrics.ts';

export interface MetricsRouteDeps {
  metrics: GatewayMetrics;
  /** The outbox; null before the gateway has opened it. */
  outbox: () => Outbox | null;
}

export const metricsRoute: FastifyPluginAsync<MetricsRouteDeps> = async (app, { metrics, outbox }) => {
  app.get('/metrics', async (_request, reply) => {
    const ob = outbox();
    if (ob) {
      metrics.outboxDepth.set(ob.depth);
      metrics.outboxDeadLetters.set(ob.stats().deadLettered);
    }
    const { contentType, body } = await metrics.render();
    reply.type(contentType);
    return body;
  });
};

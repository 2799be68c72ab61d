/**
 * The gateway's Prometheus metrics. Each gateway has its own registry (tests and `turnstream
 * up` may run several in one process); `/metrics` serves it merged with the process-wide
 * registry of streams/ (default process metrics).
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { metricsRegistry } from '../core/index.ts';

export class GatewayMetrics {
  readonly registry = new Registry();
  readonly requests: Counter<'route' | 'status'>;
  readonly latency: Histogram<'route' | 'stream'>;
  readonly timeToFirstToken: Histogram<'engine'>;
  readonly interTokenLatency: Histogram<'engine'>;
  readonly tokens: Counter<'kind'>;
  readonly turnsCaptured: Counter<'turn_type' | 'session_source'>;
  readonly outboxDepth: Gauge;
  readonly kafkaConnected: Gauge;
  readonly policyVersion: Gauge<'model_id'>;
  readonly policySwaps: Counter;
  readonly sessionIndexSize: Gauge;
  readonly turnsTruncated: Counter;
  readonly outboxDeadLetters: Gauge;
  readonly generationsActive: Gauge;
  readonly generationsQueued: Gauge;
  readonly generationsRejected: Counter;
  readonly streamsCut: Counter<'reason'>;

  constructor(gatewayId: string) {
    this.registry.setDefaultLabels({ gateway_id: gatewayId });
    const r = [this.registry];
    this.requests = new Counter({
      name: 'turnstream_gateway_requests_total',
      help: 'HTTP requests by route and status',
      labelNames: ['route', 'status'],
      registers: r,
    });
    this.latency = new Histogram({
      name: 'turnstream_gateway_request_duration_seconds',
      help: 'Chat completion latency (request to last byte)',
      labelNames: ['route', 'stream'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
      registers: r,
    });
    this.timeToFirstToken = new Histogram({
      name: 'turnstream_gateway_time_to_first_token_seconds',
      help: 'Time from request to the first generated text',
      labelNames: ['engine'],
      // Up to 300 s: on CPU an 8k-token prompt takes 83 s to its first token (a 10 s cap put it in +Inf).
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 180, 300],
      registers: r,
    });
    this.interTokenLatency = new Histogram({
      name: 'turnstream_gateway_inter_token_latency_seconds',
      help: "Mean time between a choice's generated tokens after its first: (last delta - first delta) / (completion tokens - 1)",
      labelNames: ['engine'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 2.5, 5, 10],
      registers: r,
    });
    this.tokens = new Counter({
      name: 'turnstream_gateway_tokens_total',
      help: 'Tokens processed, by kind (prompt, completion; prompt_cached: prompt tokens whose evaluation the prefix cache reused)',
      labelNames: ['kind'],
      registers: r,
    });
    this.turnsCaptured = new Counter({
      name: 'turnstream_gateway_turns_captured_total',
      help: 'Turn events written to the outbox',
      labelNames: ['turn_type', 'session_source'],
      registers: r,
    });
    this.outboxDepth = new Gauge({
      name: 'turnstream_gateway_outbox_depth',
      help: 'Events in the local outbox not yet acknowledged by Kafka',
      registers: r,
    });
    this.kafkaConnected = new Gauge({
      name: 'turnstream_gateway_kafka_connected',
      help: '1 when the last Kafka send succeeded',
      registers: r,
    });
    this.policyVersion = new Gauge({
      name: 'turnstream_gateway_policy_version',
      help: 'Version of the policy being served',
      labelNames: ['model_id'],
      registers: r,
    });
    this.policySwaps = new Counter({ name: 'turnstream_gateway_policy_swaps_total', help: 'Hot swaps of the served policy', registers: r });
    this.sessionIndexSize = new Gauge({
      name: 'turnstream_gateway_session_index_size',
      help: 'Turns remembered for session inference',
      registers: r,
    });
    this.turnsTruncated = new Counter({
      name: 'turnstream_gateway_turns_truncated_total',
      help: 'Turns larger than their topic allows, shrunk to fit (kept whole on disk)',
      registers: r,
    });
    this.outboxDeadLetters = new Gauge({
      name: 'turnstream_gateway_outbox_dead_letters',
      help: 'Outbox records Kafka refused for good since start, set aside (dead-letters.jsonl, DLQ)',
      registers: r,
    });
    this.generationsActive = new Gauge({
      name: 'turnstream_gateway_generations_active',
      help: 'Generations running (at most GATEWAY_MAX_CONCURRENT_GENERATIONS)',
      registers: r,
    });
    this.generationsQueued = new Gauge({
      name: 'turnstream_gateway_generations_queued',
      help: 'Requests waiting for a generation slot',
      registers: r,
    });
    this.generationsRejected = new Counter({
      name: 'turnstream_gateway_generations_rejected_total',
      help: 'Requests answered 429: slots and queue full, or waited too long',
      registers: r,
    });
    this.streamsCut = new Counter({
      name: 'turnstream_gateway_streams_cut_total',
      help: 'Streaming responses cut because the client stopped reading',
      labelNames: ['reason'],
      registers: r,
    });
  }

  async render(): Promise<{ contentType: string; body: string }> {
    // Each registry renders its own: a merged registry would drop this one's default label
    // (gateway_id), which tells several gateways' series apart.
    const [own, shared] = await Promise.all([this.registry.metrics(), metricsRegistry.metrics()]);
    return { contentType: this.registry.contentType, body: `${own.trimEnd()}\n\n${shared}` };
  }
}

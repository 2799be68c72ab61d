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
    const counter = <L extends string = never>(name: string, help: string, labelNames: L[] = []) =>
      new Counter<L>({ name, help, labelNames, registers: r });
    const gauge = <L extends string = never>(name: string, help: string, labelNames: L[] = []) =>
      new Gauge<L>({ name, help, labelNames, registers: r });
    const histogram = <L extends string>(name: string, help: string, labelNames: L[], buckets: number[]) =>
      new Histogram<L>({ name, help, labelNames, buckets, registers: r });
    this.requests = counter('turnstream_gateway_requests_total', 'HTTP requests by route and status', ['route', 'status']);
    this.latency = histogram(
      'turnstream_gateway_request_duration_seconds',
      'Chat completion latency (request to last byte)',
      ['route', 'stream'],
      [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
    );
    // Up to 300 s: on CPU an 8k-token prompt takes 83 s to its first token (a 10 s cap put it in +Inf).
    this.timeToFirstToken = histogram(
      'turnstream_gateway_time_to_first_token_seconds',
      'Time from request to the first generated text',
      ['engine'],
      [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 180, 300],
    );
    this.interTokenLatency = histogram(
      'turnstream_gateway_inter_token_latency_seconds',
      "Mean time between a choice's generated tokens after its first: (last delta - first delta) / (completion tokens - 1)",
      ['engine'],
      [0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 2.5, 5, 10],
    );
    this.tokens = counter(
      'turnstream_gateway_tokens_total',
      'Tokens processed, by kind (prompt, completion; prompt_cached: prompt tokens whose evaluation the prefix cache reused)',
      ['kind'],
    );
    this.turnsCaptured = counter('turnstream_gateway_turns_captured_total', 'Turn events written to the outbox', [
      'turn_type',
      'session_source',
    ]);
    this.outboxDepth = gauge('turnstream_gateway_outbox_depth', 'Events in the local outbox not yet acknowledged by Kafka');
    this.kafkaConnected = gauge('turnstream_gateway_kafka_connected', '1 when the last Kafka send succeeded');
    this.policyVersion = gauge('turnstream_gateway_policy_version', 'Version of the policy being served', ['model_id']);
    this.policySwaps = counter('turnstream_gateway_policy_swaps_total', 'Hot swaps of the served policy');
    this.sessionIndexSize = gauge('turnstream_gateway_session_index_size', 'Turns remembered for session inference');
    this.turnsTruncated = counter(
      'turnstream_gateway_turns_truncated_total',
      'Turns larger than their topic allows, shrunk to fit (kept whole on disk)',
    );
    this.outboxDeadLetters = gauge(
      'turnstream_gateway_outbox_dead_letters',
      'Outbox records Kafka refused for good since start, set aside (dead-letters.jsonl, DLQ)',
    );
    this.generationsActive = gauge(
      'turnstream_gateway_generations_active',
      'Generations running (at most GATEWAY_MAX_CONCURRENT_GENERATIONS)',
    );
    this.generationsQueued = gauge('turnstream_gateway_generations_queued', 'Requests waiting for a generation slot');
    this.generationsRejected = counter(
      'turnstream_gateway_generations_rejected_total',
      'Requests answered 429: slots and queue full, or waited too long',
    );
    this.streamsCut = counter('turnstream_gateway_streams_cut_total', 'Streaming responses cut because the client stopped reading', [
      'reason',
    ]);
  }

  async render(): Promise<{ contentType: string; body: string }> {
    // Each registry renders its own: a merged registry would drop this one's default label
    // (gateway_id), which tells several gateways' series apart.
    const [own, shared] = await Promise.all([this.registry.metrics(), metricsRegistry.metrics()]);
    return { contentType: this.registry.contentType, body: `${own.trimEnd()}\n\n${shared}` };
  }
}

// Public surface of gateway/: what the CLI and other folders may use.
export { createGateway, type Gateway } from './server.ts';
export type { GatewayOptions, BuiltinOptions } from './options.ts';
export { ADMISSION_DEFAULTS, GATEWAY_DEFAULTS, LLAMA_ENGINE_DEFAULTS, SSE_DEFAULTS, type LlamaBatching } from './defaults.ts';
export type { AdmissionOptions } from './admission.ts';
export type { SseLimits } from './sse-writer.ts';
export type { KafkaLinkOptions } from './event-sink.ts';
export type { ProxyEngineOptions } from './proxy-engine.ts';
export { LlamaEngine, type LlamaEngineOptions } from './llama-engine.ts';
export type { ChatRequest } from './chat-request.ts';

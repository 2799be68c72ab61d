/**
 * The gateway's defaults: what `turnstream gateway` (and `up`) serve with when nothing is set, and
 * what `createGateway` falls back to for an option left out.
 */
export const GATEWAY_DEFAULTS = Object.freeze({
  port: 30000,
  host: '127.0.0.1',
  defaultTurnType: 'main' as 'main' | 'side',
  bodyLimitBytes: 4 * 1024 * 1024,
  generationTimeoutMs: 300_000,
  maxTokensLimit: 262_144,
  captureBoundMs: 1000,
  outboxReadyMaxDepth: 10_000,
  outboxStallMs: 60_000,
  sessionIndexSize: 10_000,
  shareSessions: true,
  sessionShareWindowMs: 30 * 60 * 1000,
  stopGraceMs: 10_000,
  drainOnStopMs: 5000,
});

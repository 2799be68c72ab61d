/**
 * The services a chaos run puts under test, as `turnstream up` runs them: the gateway on the
 * built-in tiny model, the three processors, the trainer and the ClickHouse sink, each a
 * `bin/turnstream.js` child under the infra supervisor, configured to settle quickly.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Supervisor, type StackEndpoints } from '../../infra/index.ts';

const BIN = fileURLToPath(new URL('../../bin/turnstream.js', import.meta.url));

/** The services' environment: this run's home and stack, the gateway on `gatewayPort`, short timeouts. */
export function serviceEnv(home: string, up: StackEndpoints, gatewayPort: number): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TURNSTREAM_HOME: home,
    KAFKA_BROKERS: up.brokers,
    SCHEMA_REGISTRY_URL: up.registryUrl,
    CLICKHOUSE_URL: up.clickhouseUrl,
    TURNSTREAM_TOPIC_PREFIX: '',
    // The faults are the subject, not the model: the built-in tiny one answers in milliseconds.
    TURNSTREAM_MODEL: 'builtin',
    PORT: String(gatewayPort),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    // Sessions end on their own soon after their last turn, so every turn gets its pair.
    SESSION_IDLE_TIMEOUT_MS: '4000',
    FEEDBACK_GRACE_MS: '500',
    PROCESSOR_SESSION_TIMEOUT_MS: '8000',
    TRAIN_BATCH_SIZE: '8',
    TRAIN_MAX_WAIT_MS: '3000',
    TRAIN_MAX_STALENESS: '1000',
    GATEWAY_STREAM_STALL_TIMEOUT_MS: '10000',
    SINK_FLUSH_MS: '300',
  };
  for (const k of [
    'TURNSTREAM_API_KEYS',
    'TURNSTREAM_SERVICE_KEYS',
    'UPSTREAM_BASE_URL',
    'JUDGE_BASE_URL',
    'TEACHER_BASE_URL',
    'TURNSTREAM_WEIGHTS_DIR',
  ])
    delete env[k];
  return env;
}

/** `turnstream init-weights` in `env`: the trainer's first version, before the services start. */
export function initWeights(env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const c = spawn(process.execPath, [BIN, 'init-weights'], { env, stdio: 'ignore' });
    c.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`init-weights exited ${code}`))));
  });
}

/** A supervisor of `bin/turnstream.js` children that logs into `<home>/logs` and reports every state but running. */
export function chaosSupervisor(home: string, env: NodeJS.ProcessEnv, say: (line: string) => void): Supervisor {
  return new Supervisor({
    bin: BIN,
    logDir: join(home, 'logs'),
    env,
    restartDelayMs: 500,
    maxRestartDelayMs: 5000,
    onChange: (name, state, detail) => {
      if (state !== 'running') say(`  ${name}: ${state}${detail ? ` (${detail.split(';')[0]})` : ''}`);
    },
  });
}

/**
 * Starts every service under `supervisor` and waits (up to 4 minutes) until all are ready.
 * @throws Error when one does not come up, naming the folder of their logs
 */
export async function startServices(supervisor: Supervisor, gatewayUrl: string, home: string): Promise<void> {
  const httpOk = (url: string) => async () => (await fetch(url, { signal: AbortSignal.timeout(2000) })).ok;
  supervisor.start({ name: 'gateway', args: ['gateway'], url: gatewayUrl, healthy: httpOk(`${gatewayUrl}/readyz`) });
  for (const p of ['session-assembler', 'judge', 'sample-builder']) supervisor.start({ name: p, args: ['process', p] });
  supervisor.start({ name: 'trainer', args: ['train', '--backend', 'cpu'] });
  supervisor.start({ name: 'clickhouse-sink', args: ['sink'] });
  if (!(await supervisor.waitReady(240_000))) throw new Error(`services did not come up; see ${join(home, 'logs')}`);
}

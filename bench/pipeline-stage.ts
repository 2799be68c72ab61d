// One stage of `bench pipeline` in a process of its own, as `turnstream up` runs each processor:
// started by bench/pipeline.ts with `--processes`, it prints "ready" once the stage has joined its
// group and stops when its stdin closes: the bench's stop, or the bench's end (killed, crashed).
//   node --import tsx bench/pipeline-stage.ts <session-assembler|judge|sample-builder> BROKERS REGISTRY_URL PREFIX GRACE_MS
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createEmbeddedJudge, startJudge, startSampleBuilder, startSessionAssembler, type ServiceOptions } from '../processors/index.ts';
import { createEventCodecs, createKafka, parseBrokers, type ProcessorHandle } from '../streams/index.ts';
import { createLogger } from '../core/index.ts';

export const PIPELINE_STAGES = ['session-assembler', 'judge', 'sample-builder'] as const;
export type PipelineStage = (typeof PIPELINE_STAGES)[number];

/** The stage as the bench runs it, in this process or in one of its own. */
export async function startPipelineStage(stage: PipelineStage, common: ServiceOptions, graceMs: number): Promise<ProcessorHandle> {
  if (stage === 'session-assembler') return startSessionAssembler({ ...common, feedbackGraceMs: graceMs });
  if (stage === 'judge') return startJudge({ ...common, judge: createEmbeddedJudge() });
  return startSampleBuilder({ ...common, method: 'combined' });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [stage, brokers, registryUrl, prefix, grace] = process.argv.slice(2);
  const kafka = createKafka({
    brokers: parseBrokers(brokers),
    clientId: `bench-pipeline-${stage}`,
    logger: createLogger('kafka', 'error'),
  });
  const codecs = await createEventCodecs({ registryUrl, naming: { prefix } });
  const handle = await startPipelineStage(stage as PipelineStage, { kafka, codecs, logger: createLogger('bench', 'warn') }, Number(grace));
  await handle.ready;
  process.stdout.write('ready\n');
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    void handle.stop().finally(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.stdin.once('close', stop);
  process.stdin.resume();
}

/** A stage in a child process of its own. */
export class StageProcess {
  readonly ready: Promise<void>;
  readonly stage: PipelineStage;
  private readonly child: ChildProcess;
  private readonly exited: Promise<void>;

  constructor(stage: PipelineStage, endpoints: { brokers: string; registryUrl: string }, prefix: string, graceMs: number) {
    this.stage = stage;
    const args = [stage, endpoints.brokers, endpoints.registryUrl, prefix, String(graceMs)];
    this.child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), ...args], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    // A stage that already exited leaves a closed pipe: ending it then is no error.
    this.child.stdin!.on('error', () => undefined);
    let err = '';
    this.child.stderr!.on('data', (d: Buffer) => void (err = (err + d.toString()).slice(-2000)));
    this.exited = new Promise((resolve) => this.child.once('exit', () => resolve()));
    this.ready = new Promise((resolve, reject) => {
      this.child.stdout!.on('data', (d: Buffer) => {
        if (d.toString().includes('ready')) resolve();
      });
      this.child.once('exit', (code) =>
        reject(new Error(`bench pipeline: the ${stage} process exited (${code}) before it was ready: ${err}`)),
      );
    });
    this.ready.catch(() => undefined);
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Closes the stage's stdin, as the bench's exit would: it stops its processor and exits. */
  async stop(): Promise<void> {
    this.child.stdin!.end();
    await this.exited;
  }
}

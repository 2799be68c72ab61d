/** Shared helpers of the processors' integration tests: a topic family, events, reading topics. */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  defaultGroupId,
  startJudge,
  startSampleBuilder,
  startSessionAssembler,
  type JudgeServiceOptions,
  type SampleBuilderServiceOptions,
  type SessionAssemblerServiceOptions,
} from '../../../processors/index.ts';
import type { TopicId, Turn } from '../../../schemas/index.ts';
import type { OutgoingEvent, ProcessorHandle } from '../../../streams/index.ts';
import { caughtUp } from '../../support/caught-up.ts';
import { conversationTurns } from '../../support/conversation.ts';
import { ensureStack, REPO_ROOT } from '../../support/stack.ts';
import type { Family } from '../../support/topic-family.ts';
import { waitFor as waitForCondition } from '../../support/wait-for.ts';

export { family, readAll, type Family } from '../../support/topic-family.ts';

/**
 * Waits until processor `service` (its default group on the family's topics) has committed every
 * record now in `inputs`: what it wrote for them is final from then on (test/support/caught-up.ts).
 */
export async function caughtUpOn(f: Family, service: string, inputs: TopicId[]): Promise<void> {
  await caughtUp(
    f.kafka,
    defaultGroupId(service, f.codecs.naming),
    inputs.map((id) => f.codecs.topic(id)),
  );
}

type OnFamily<T> = Omit<T, 'kafka' | 'codecs'>;

/** The session assembler, judge and sample builder in this process on `f`'s topics, each ready. */
export async function startStages(
  f: Family,
  o: {
    assembler?: OnFamily<SessionAssemblerServiceOptions>;
    judge: OnFamily<JudgeServiceOptions>;
    builder: OnFamily<SampleBuilderServiceOptions>;
  },
): Promise<ProcessorHandle[]> {
  const common = { kafka: f.kafka, codecs: f.codecs };
  const handles = await Promise.all([
    startSessionAssembler({ ...common, ...o.assembler }),
    startJudge({ ...common, ...o.judge }),
    startSampleBuilder({ ...common, ...o.builder }),
  ]);
  await Promise.all(handles.map((h) => h.ready));
  return handles;
}

/** Waits until the assembler, the judge and the sample builder, in that order, have committed all their input. */
export async function pipelineCaughtUp(f: Family): Promise<void> {
  await caughtUpOn(f, 'session-assembler', ['turns', 'feedback']);
  await caughtUpOn(f, 'judge', ['pairs']);
  await caughtUpOn(f, 'sample-builder', ['judgements']);
}

/** The shared waitFor (test/support/wait-for.ts) with this folder's defaults: 90 s, a check every 500 ms. */
export async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 90_000): Promise<void> {
  await waitForCondition(what, check, { timeoutMs, intervalMs: 500 });
}

/**
 * A conversation of `userMessages.length` main turns in one session: turn i's request is the
 * full history ending with user message i; its reply is `reply i`. Times start now.
 */
export function conversation(sessionId: string, userMessages: string[], over: (i: number) => Partial<Turn> = () => ({})): Turn[] {
  const t0 = Date.now();
  return conversationTurns(userMessages, (i) => ({
    turnId: randomUUID(),
    sessionId,
    requestedAt: t0 + i * 10,
    completedAt: t0 + i * 10 + 5,
    ...over(i),
  }));
}

/** `turnstream ARGS` as a child process on the family's topics and this stack (stdout and stderr piped). */
export async function spawnTurnstream(f: Family, args: string[], env: Record<string, string> = {}): Promise<ChildProcess> {
  const stack = await ensureStack();
  return spawn(process.execPath, ['--import', 'tsx', 'bin/turnstream.js', ...args], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      KAFKA_BROKERS: stack.brokers,
      SCHEMA_REGISTRY_URL: stack.registryUrl,
      TURNSTREAM_TOPIC_PREFIX: f.prefix,
      LOG_LEVEL: 'warn',
      ...env,
    },
  });
}

/**
 * `turnstream process <name> --instance 0` as a child process on the family's topics, so a test
 * can SIGKILL it. Resolves once it says it is running.
 */
export async function spawnProcessor(f: Family, name: string, env: Record<string, string> = {}): Promise<ChildProcess> {
  const child = await spawnTurnstream(f, ['process', name, '--instance', '0'], { PROCESSOR_SESSION_TIMEOUT_MS: '7000', ...env });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => void (err = (err + d.toString()).slice(-4000)));
  await new Promise<void>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`${name} did not start within 60 s: ${err}`)), 60_000);
    child.stdout!.on('data', (d: Buffer) => {
      if (d.toString().includes('is running')) {
        clearTimeout(timer);
        ok();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`${name} exited with ${code} before it ran: ${err}`));
    });
  });
  return child;
}

export async function kill9(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
}

/** Sends `events` in slices of `batch` every `everyMs`, as live traffic does; resolves when all are sent. */
export async function produceSteadily(f: Family, events: OutgoingEvent[], batch: number, everyMs: number): Promise<void> {
  for (let i = 0; i < events.length; i += batch) {
    await f.producer.sendAll(events.slice(i, i + batch));
    await sleep(everyMs); // deliberate: traffic paced as live traffic is
  }
}

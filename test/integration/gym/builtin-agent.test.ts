/**
 * The built-in agent's loop against a fake OpenAI endpoint that scripts the replies, with tools and
 * code blocks run in the real sandbox: tool calls and their `tool` messages, code blocks and the
 * output as the next user message, a reply with no action as the final answer, max_turns, the
 * task's timeout, garbage from the model and from the endpoint, Ctrl-C; and what every call
 * carries (session and turn-type headers, metadata, sampling with a seed per call).
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { after, before, describe, it } from 'node:test';
import { runRollout } from '../../../gym/agent/run-rollout.ts';
import type { RolloutOptions, RolloutResult } from '../../../gym/agent/rollout-types.ts';
import { parseTaskSuite } from '../../../gym/tasks/parse-task-suite.ts';
import type { Task } from '../../../gym/tasks/task.ts';
import { waitFor } from '../../support/wait-for.ts';
import { startFakeOpenAI, type FakeOpenAI, type Scripted } from './fake-openai.ts';

const task = (spec: Record<string, unknown>): Task => parseTaskSuite(JSON.stringify({ instruction: 'Do it.', ...spec }))[0];
type Msg = { role: string; content: string | null; tool_calls?: unknown[]; tool_call_id?: string };

describe('the built-in agent', { timeout: 120_000 }, () => {
  let fake: FakeOpenAI;
  let n = 0;
  before(async () => {
    fake = await startFakeOpenAI();
  });
  after(async () => {
    await fake?.close();
  });

  /** One rollout of a task with scripted replies. */
  async function play(t: Task, replies: Scripted[], extra: Partial<RolloutOptions> = {}): Promise<{ r: RolloutResult; session: string }> {
    const session = `agent-test-${++n}`;
    fake.script(session, replies);
    const r = await runRollout(t, {
      baseURL: fake.url,
      model: 'fake-model',
      sessionId: session,
      metadata: { gym_task: t.id, gym_group: 'g-1', gym_rollout: '3' },
      maxRetries: 0,
      ...extra,
    });
    return { r, session };
  }

  it('runs tool calls in the sandbox and returns their results as tool messages; every call carries the rollout’s headers, metadata and sampling', async () => {
    const t = task({ id: 'tools', files: { 'low.txt': 'quiet words\n' }, verify: { command: "grep -qx 'QUIET WORDS' up.txt" } });
    const { r, session } = await play(
      t,
      [
        { content: null, toolCalls: [{ name: 'read_file', arguments: '{"path":"low.txt"}' }] },
        {
          content: 'Writing it.',
          toolCalls: [
            { name: 'write_file', arguments: JSON.stringify({ path: 'up.txt', content: 'QUIET WORDS\n' }) },
            { name: 'bash', arguments: '{"command":"cat up.txt; echo oops >&2; exit 3"}' },
            { name: 'python', arguments: '{"code":"print(6 * 7)"}' },
          ],
        },
        { content: 'Done: up.txt holds the capitals.' },
      ],
      { userId: 'user-9', sampling: { temperature: 0.3, maxTokens: 33, seed: 100, topP: 0.9 } },
    );
    assert.equal(r.verdict.passed, true, r.verdict.detail);
    assert.equal(r.verdict.reward, 1);
    assert.equal(r.stoppedBy, 'answer');
    assert.equal(r.steps, 3);
    assert.equal(r.finalAnswer, 'Done: up.txt holds the capitals.');
    assert.deepEqual(r.turnIds.length, 3);
    assert.ok(r.turnIds.every((id) => /^turn-\d+$/.test(id)));
    assert.deepEqual(
      r.policyVersions,
      r.turnIds.map((id) => Number(id.slice(5)) % 3),
    );
    const tools = (r.messages as Msg[]).filter((m) => m.role === 'tool');
    assert.deepEqual(
      tools.map((m) => m.content),
      ['quiet words\n', 'wrote 12 bytes to up.txt', 'QUIET WORDS\noops\n(exit 3)', '42'],
    );
    assert.ok(tools.every((m) => typeof m.tool_call_id === 'string'));
    const reqs = fake.requests(session);
    assert.equal(reqs.length, 3);
    reqs.forEach((q, k) => {
      assert.equal(q.headers['x-session-id'], session);
      assert.equal(q.headers['x-turn-type'], 'main');
      assert.equal(q.headers['x-user-id'], 'user-9');
      assert.deepEqual(q.body.metadata, { gym_task: 'tools', gym_group: 'g-1', gym_rollout: '3' });
      assert.equal(q.body.temperature, 0.3);
      assert.equal(q.body.max_tokens, 33);
      assert.equal(q.body.top_p, 0.9);
      assert.equal(q.body.seed, 100 + k, 'a seed per call');
      assert.deepEqual(
        (q.body.tools as Array<{ function: { name: string } }>).map((x) => x.function.name),
        ['bash', 'read_file', 'write_file', 'python'],
      );
    });
    assert.equal((reqs[2].body.messages as Msg[]).length, (r.messages as Msg[]).length - 1, 'the transcript as sent, and the last reply');
    assert.ok(r.timings.totalMs >= r.timings.generationMs && r.timings.toolMs > 0 && r.timings.verifyMs > 0);
  });

  it('runs bash and python code blocks and returns their output as the next user message; a reply without one is the final answer', async () => {
    const t = task({ id: 'blocks', tools: ['bash', 'python'], verify: { answer: { regex_present: '\\b42\\b' } } });
    const { r } = await play(t, [
      { content: 'Let me look.\n```bash\necho hello > out.txt\ncat out.txt\n```' },
      { content: '```python\nprint(6 * 7)\n```\nand\n```sh\nexit 2\n```' },
      { content: 'It is 42.' },
    ]);
    assert.equal(r.stoppedBy, 'answer');
    assert.equal(r.steps, 3);
    assert.equal(r.finalAnswer, 'It is 42.');
    assert.equal(r.verdict.passed, true);
    const users = (r.messages as Msg[]).filter((m) => m.role === 'user').map((m) => m.content);
    assert.equal(users[1], 'Output of the bash block:\n```\nhello\n```');
    assert.equal(users[2], 'Output of block 1 (python):\n```\n42\n```\n\nOutput of block 2 (bash):\n```\n(no output)\n(exit 2)\n```');
    assert.equal(
      (r.messages as Msg[])[0].content?.startsWith('You are a helpful assistant with a Linux shell.'),
      true,
      'the default system prompt names the ways to act',
    );
  });

  it('an answer-only task offers no tools, runs no code block, and ends at the first reply', async () => {
    const t = task({ id: 'answer-only', tools: [], verify: { answer: { max_words: 20 } } });
    const { r, session } = await play(t, [{ content: 'Run this:\n```bash\ntouch hacked\n```' }]);
    assert.equal(r.steps, 1);
    assert.equal(r.stoppedBy, 'answer');
    assert.equal(fake.requests(session)[0].body.tools, undefined);
    assert.equal((r.messages as Msg[])[0].role, 'user', 'no system prompt of ours: the gateway’s applies');
  });

  it('stops at max_turns model calls; the last reply is the final answer', async () => {
    const t = task({ id: 'loop', max_turns: 3, verify: { command: 'test -f made' } });
    const { r } = await play(t, [
      { content: '```bash\ntouch made\n```' },
      { content: '```bash\nls\n```' },
      { content: '```bash\nls\n```' },
      { content: 'never asked' },
    ]);
    assert.equal(r.steps, 3);
    assert.equal(r.stoppedBy, 'max_turns');
    assert.equal(r.finalAnswer, '```bash\nls\n```');
    assert.equal(r.verdict.passed, true, 'the verifier judges what the episode left');
  });

  it('stops at the task’s timeout: the model call in flight and a running command are aborted, and the verifier still runs', async () => {
    const slowModel = task({ id: 'slow-model', timeout_s: 1, verify: { command: 'true' } });
    const t0 = Date.now();
    const { r } = await play(slowModel, [{ delayMs: 30_000 }]);
    assert.equal(r.stoppedBy, 'timeout');
    assert.ok(Date.now() - t0 < 10_000, `stopped in ${Date.now() - t0} ms`);
    assert.equal(r.verdict.passed, true);

    const slowCommand = task({ id: 'slow-command', timeout_s: 1.5, verify: { command: 'test ! -f late' } });
    const t1 = Date.now();
    const { r: r2 } = await play(slowCommand, [{ content: '```bash\nsleep 30; touch late\n```' }]);
    assert.equal(r2.stoppedBy, 'timeout');
    assert.ok(Date.now() - t1 < 10_000, `stopped in ${Date.now() - t1} ms`);
    assert.equal(r2.verdict.passed, true, 'the command was killed before it could finish');
  });

  it('garbage from the model goes back to it as tool errors: bad JSON, unknown or unoffered tools, missing fields, paths outside', async () => {
    const t = task({ id: 'garbage', tools: ['bash', 'read_file'], verify: { command: 'true' } });
    const { r } = await play(t, [
      {
        content: null,
        toolCalls: [
          { name: 'bash', arguments: '{"command": ' },
          { name: 'rm_rf', arguments: '{}' },
          { name: 'python', arguments: '{"code":"print(1)"}' },
          { name: 'bash', arguments: '{"cmd":"ls"}' },
          { name: 'read_file', arguments: '{"path":"../../etc/passwd"}' },
          { name: 'read_file', arguments: '{"path":"nope.txt"}' },
          { name: 'bash', arguments: '["ls"]' },
        ],
      },
      { content: 'ok' },
    ]);
    assert.equal(r.stoppedBy, 'answer');
    const tools = (r.messages as Msg[]).filter((m) => m.role === 'tool').map((m) => m.content ?? '');
    assert.equal(tools.length, 7);
    assert.match(tools[0], /^error: the arguments are not valid JSON/);
    assert.equal(tools[1], 'error: there is no tool "rm_rf" (tools: bash, read_file)');
    assert.equal(tools[2], 'error: there is no tool "python" (tools: bash, read_file)');
    assert.equal(tools[3], 'error: bash needs a string "command"');
    assert.match(tools[4], /^error: workspace paths may not contain "\.\."/);
    assert.match(tools[5], /^error: no file "nope\.txt" in the workspace/);
    assert.equal(tools[6], 'error: the arguments must be a JSON object');
  });

  it('long output is cut for the model, with a note', async () => {
    const t = task({ id: 'long', verify: { command: 'true' } });
    const { r } = await play(
      t,
      [
        { content: null, toolCalls: [{ name: 'bash', arguments: '{"command":"head -c 5000 /dev/zero | tr \'\\\\0\' x"}' }] },
        { content: 'ok' },
      ],
      {
        toolOutputChars: 100,
      },
    );
    const out = (r.messages as Msg[]).find((m) => m.role === 'tool')!.content!;
    assert.equal(out, `${'x'.repeat(100)}\n[output cut: 100 of 5000 characters shown]`);
  });

  it('an endpoint error, an answer without a choice, or not JSON ends the episode with stoppedBy error; the verdict is still given', async () => {
    const t = task({ id: 'broken', verify: { command: 'true' } });
    const e500 = await play(t, [{ status: 500, body: JSON.stringify({ error: { message: 'engine exploded', type: 'server_error' } }) }]);
    assert.equal(e500.r.stoppedBy, 'error');
    assert.match(e500.r.error!, /engine exploded/);
    assert.equal(e500.r.verdict.passed, true);
    const empty = await play(t, [{ status: 200, body: JSON.stringify({ id: 'x', choices: [] }) }]);
    assert.equal(empty.r.stoppedBy, 'error');
    assert.equal(empty.r.error, 'the gateway answered without a choice');
    const junk = await play(t, [{ status: 200, body: 'not json at all' }]);
    assert.equal(junk.r.stoppedBy, 'error');
  });

  it('takes the turn id from the response id where the endpoint sends no X-Turn-Id; −1 as the version without X-Policy-Version', async () => {
    const t = task({ id: 'no-headers', tools: [], verify: { answer: { min_words: 1 } } });
    const { r } = await play(t, [{ content: 'hello', noHeaders: true }]);
    assert.equal(r.turnIds.length, 1);
    assert.match(r.turnIds[0], /^turn-\d+$/);
    assert.deepEqual(r.policyVersions, [-1]);
  });

  it('Ctrl-C: an abort rejects with TS_ERR_ABORTED, kills the running command and removes the sandbox', async () => {
    const t = task({ id: 'abort', verify: { command: 'true' } });
    const ac = new AbortController();
    const session = `agent-test-${++n}`;
    fake.script(session, [{ content: '```bash\necho started > started; sleep 30\n```' }]);
    const rollout = runRollout(t, {
      baseURL: fake.url,
      model: 'fake-model',
      sessionId: session,
      metadata: { gym_task: t.id, gym_group: 'g', gym_rollout: '0' },
      maxRetries: 0,
      signal: ac.signal,
    });
    // Abort once the command is running (its file is in the workspace).
    const workspace = await waitFor(
      'the command to start',
      () =>
        readdirSync(tmpdir())
          .filter((x) => x.startsWith(`turnstream-sandbox-${process.pid}-`))
          .map((d) => `${tmpdir()}/${d}`)
          .find((box) => existsSync(`${box}/workspace/started`)),
      { timeoutMs: 20_000, intervalMs: 20 },
    );
    const t0 = Date.now();
    ac.abort();
    await assert.rejects(rollout, { code: 'TS_ERR_ABORTED' });
    assert.ok(Date.now() - t0 < 5000);
    assert.equal(existsSync(workspace), false, 'the sandbox is gone');
    await assert.rejects(
      runRollout(t, {
        baseURL: fake.url,
        model: 'm',
        sessionId: 's',
        metadata: { gym_task: 'a', gym_group: 'g', gym_rollout: '0' },
        signal: ac.signal,
      }),
      {
        code: 'TS_ERR_ABORTED',
      },
    );
  });
});

/**
 * History whose conversations end with the user's last word (often the verdict): after
 * `import --format openai-chat`, each conversation's last assistant turn is paired with that
 * message, tool results are paired as live, and a replay judges every pair with real votes.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createLlmJudge } from '../../../processors/index.ts';
import { importFile, parseBound, runReplay } from '../../../history/index.ts';
import type { TurnPair } from '../../../schemas/index.ts';
import { createEventCodecs, readToEnd } from '../../../streams/index.ts';
import { ensureStack } from '../../support/stack.ts';
import { chat, startFakeOpenAI, type FakeServer } from '../../unit/processors/support/fake-openai.ts';
import { family, type Family } from '../processors/support.ts';

const VERDICTS = ['👎 no, that is wrong', 'perfect, thanks!', 'hm, try again'];

/** Three conversations, each ending with a user message after the last answer; the second calls a tool. */
function history(): string {
  const lines = VERDICTS.map((verdict, i) => {
    const messages: unknown[] = [{ role: 'user', content: `question ${i}` }];
    if (i === 1) {
      messages.push({
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'ls', arguments: '{}' } }],
      });
      messages.push({ role: 'tool', tool_call_id: 'c1', content: 'a.txt' });
    }
    messages.push({ role: 'assistant', content: `answer ${i}` }, { role: 'user', content: verdict });
    return JSON.stringify({ session_id: `conv-${i}`, user: 'alice', timestamp: `2026-03-0${i + 1}T10:00:00Z`, messages });
  });
  return `${lines.join('\n')}\n{"messages": "not a list"}\n`;
}

describe('import keeps the last word, replay judges it', { timeout: 240_000 }, () => {
  let f: Family;
  let dir: string;
  let judge: FakeServer;

  before(async () => {
    f = await family('import-last-word');
    dir = await mkdtemp(join(tmpdir(), 'ts-import-last-word-'));
    // A judge that reads the next state: a correction is −1, thanks +1, a tool result +1, else 0.
    judge = await startFakeOpenAI((r) => {
      const text = JSON.stringify(r.body);
      if (text.includes('wrong')) return chat('A correction. \\boxed{-1}');
      if (text.includes('perfect') || text.includes('a.txt')) return chat('It worked. \\boxed{1}');
      return chat('Unclear. \\boxed{0}');
    });
  });
  after(async () => {
    await f?.close();
    await judge?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("each last turn's next state is the user's last word, and every pair is judged with votes", async () => {
    const file = join(dir, 'history.jsonl');
    await writeFile(file, history());
    const s = await importFile({ kafka: f.kafka, codecs: f.codecs, file, format: 'openai-chat' });
    assert.deepEqual(
      { read: s.read, conversations: s.conversations, imported: s.imported, nextStates: s.nextStates, rejected: s.rejected },
      { read: 4, conversations: 3, imported: 4, nextStates: 4, rejected: 1 },
    );

    const { registryUrl } = await ensureStack();
    const summary = await runReplay({
      kafka: f.kafka,
      registryUrl,
      prefix: f.prefix,
      tag: 'last-word',
      from: parseBound('0'),
      judge: createLlmJudge({ baseUrl: judge.baseUrl, model: 'reads-next-state', mode: 'rl', votes: 3, retries: 0, timeoutMs: 10_000 }),
      samples: { method: 'rl' },
      partitions: 2,
      planFile: join(dir, 'plan.json'),
    });
    assert.equal(summary.pairs.total, 4);
    assert.equal(summary.pairs.withNextState, 4, 'no pair without a next state');
    assert.deepEqual(summary.pairs.byEnd, { none: 4 });
    assert.equal(summary.judgements.total, 4);
    assert.equal(summary.judgements.withoutVotes, 0);
    assert.equal(summary.judgements.votes, 4 * 3, 'three valid votes per pair');
    assert.deepEqual(summary.judgements.byScore, { '-1': 1, '0': 1, '1': 2 });

    const codecs = await createEventCodecs({ registryUrl, naming: { prefix: f.prefix, tag: 'last-word' } });
    const pairs: TurnPair[] = [];
    await readToEnd(f.kafka, codecs.topic('pairs'), async (r) => void (r.value && pairs.push(await codecs.of('pairs').decode(r.value))));
    const last = (i: number) => pairs.find((p) => p.sessionId === `conv-${i}` && p.turn.response.content === `answer ${i}`)!;
    for (let i = 0; i < VERDICTS.length; i++) {
      assert.deepEqual(
        last(i).nextState.map((n) => [n.role, n.content]),
        [['USER', VERDICTS[i]]],
      );
      assert.equal(last(i).historyVerified, true);
    }
    const toolTurn = pairs.find((p) => p.sessionId === 'conv-1' && p.turn.response.toolCalls.length === 1)!;
    assert.deepEqual(
      toolTurn.nextState.map((n) => [n.role, n.content, n.toolCallId]),
      [['TOOL', 'a.txt', 'c1']],
      'the tool result is the tool call’s next state, as live',
    );
  });
});

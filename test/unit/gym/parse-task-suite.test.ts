/**
 * Reading a task suite: defaults filled in, and every bad line ONE error whose message names the
 * file, the line, the task (when it has an id) and the field, as the persona file's errors do.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadTaskSuite, parseTaskSuite } from '../../../gym/tasks/parse-task-suite.ts';
import { TOOL_NAMES } from '../../../gym/tasks/task.ts';
import { refusal } from '../../support/refusal.ts';

const line = (task: Record<string, unknown>): string => JSON.stringify(task);
const ok = {
  id: 'upper-copy',
  instruction: 'Put the text of low.txt, in capitals, into up.txt.',
  verify: { command: 'grep -qx WORDS up.txt' },
};

/** The one message a bad suite is refused with (and its code and param). */
const suiteRefusal = (text: string) => refusal(() => parseTaskSuite(text, 'suite.jsonl'), 'the suite was accepted');

describe('parseTaskSuite', () => {
  it('reads a verdict of named parts, each a command or an answer check, and the dev and test splits', () => {
    const [t, u] = parseTaskSuite(
      [
        line({
          id: 'p',
          instruction: 'x',
          split: 'dev',
          verify: { parts: { content: { answer: { regex_present: '42' } }, exists: { command: 'test -f a' } } },
        }),
        line({ id: 'q', instruction: 'y', split: 'test', verify: { answer: { max_words: 1 } } }),
      ].join('\n'),
    );
    assert.deepEqual(t.verify, { parts: { content: { answer: { regex_present: '42' } }, exists: { command: 'test -f a' } } });
    assert.deepEqual([t.split, u.split], ['dev', 'test']);
  });

  it('fills the defaults: all tools, 6 turns, 60 s, no files, no split', () => {
    const [t] = parseTaskSuite(line(ok));
    assert.deepEqual(t, { ...ok, files: {}, tools: [...TOOL_NAMES], maxTurns: 6, timeoutS: 60, verify: ok.verify });
    assert.equal('split' in t, false);
  });

  it('keeps what a task says: files, tools ([] is answer-only), max_turns, timeout_s, split, an answer check; blank lines skipped', () => {
    const text = [
      line({
        ...ok,
        files: { 'low.txt': 'quiet\n', 'sub/dir/a.txt': '' },
        tools: ['bash', 'read_file'],
        max_turns: 3,
        timeout_s: 2.5,
        split: 'eval',
      }),
      '',
      '   ',
      line({
        id: 'say-hi',
        instruction: 'Say hi.',
        tools: [],
        verify: { answer: { all: [{ regex_present: { regex: '^hi', flags: 'i' } }, { max_words: 5 }] } },
      }),
      '',
    ].join('\r\n');
    const [a, b] = parseTaskSuite(text);
    assert.deepEqual(a.files, { 'low.txt': 'quiet\n', 'sub/dir/a.txt': '' });
    assert.deepEqual(a.tools, ['bash', 'read_file']);
    assert.equal(a.maxTurns, 3);
    assert.equal(a.timeoutS, 2.5);
    assert.equal(a.split, 'test', 'eval, the older name of a held-out task, is read as test');
    assert.deepEqual(b.tools, []);
    assert.deepEqual(b.verify, { answer: { all: [{ regex_present: { regex: '^hi', flags: 'i' } }, { max_words: 5 }] } });
  });

  /** How every refusal of a field of the first (and only) task starts. */
  const TASK = 'suite.jsonl: line 1: task "upper-copy": ';
  const cases: Array<[string, string, string, string | undefined]> = [
    ['not JSON', `${line(ok)}\n{"id": "x",`, 'suite.jsonl: line 2: not JSON: ', undefined],
    ['not an object', `[1, 2]`, 'suite.jsonl: line 1: a task must be a JSON object', undefined],
    [
      'no id',
      line({ ...ok, id: undefined }),
      'suite.jsonl: line 1: id must be 1–64 letters, digits, - and _ (starting with a letter or digit)',
      'id',
    ],
    ['a bad id', line({ ...ok, id: 'has space' }), 'suite.jsonl: line 1: id must be', 'id'],
    ['a duplicate id', `${line(ok)}\n\n${line(ok)}`, 'suite.jsonl: line 3: task "upper-copy": id is used twice (lines 1 and 3)', 'id'],
    [
      'an unknown field',
      line({ ...ok, retries: 3 }),
      `${TASK}unknown field "retries" (fields: id, instruction, files, tools, verify, max_turns, timeout_s, split)`,
      'retries',
    ],
    ['no instruction', line({ ...ok, instruction: ' ' }), `${TASK}instruction must be a non-empty string`, 'instruction'],
    [
      'an unknown tool',
      line({ ...ok, tools: ['bash', 'curl'] }),
      `${TASK}tools[1] "curl" is not a tool (tools: bash, read_file, write_file, python)`,
      'tools[1]',
    ],
    ['a repeated tool', line({ ...ok, tools: ['bash', 'bash'] }), `${TASK}tools[1] repeats tools[0] (bash)`, 'tools[1]'],
    ['tools not an array', line({ ...ok, tools: 'bash' }), `${TASK}tools must be an array`, 'tools'],
    ['no verify', line({ ...ok, verify: undefined }), `${TASK}verify is missing`, 'verify'],
    [
      'verify with both',
      line({ ...ok, verify: { command: 'true', answer: { max_words: 3 } } }),
      `${TASK}verify needs exactly one of "command" and "answer" (has 2)`,
      'verify',
    ],
    ['verify with neither', line({ ...ok, verify: {} }), `${TASK}verify needs exactly one of "command" and "answer" (has 0)`, 'verify'],
    ['an unknown verify', line({ ...ok, verify: { script: 'x.sh' } }), `${TASK}verify has an unknown field "script"`, 'verify.script'],
    [
      'an empty command',
      line({ ...ok, verify: { command: '' } }),
      `${TASK}verify.command must be a non-empty shell command`,
      'verify.command',
    ],
    [
      'a bad check',
      line({ ...ok, verify: { answer: { all: [{ ends_with: '?' }, { max_words: 0 }] } } }),
      `${TASK}verify.answer.all[1].max_words must be a positive integer`,
      'verify.answer.all[1].max_words',
    ],
    [
      'a bad regex',
      line({ ...ok, verify: { answer: { regex_present: '(' } } }),
      `${TASK}verify.answer.regex_present is not a valid regex`,
      'verify.answer.regex_present',
    ],
    [
      'an unknown operator',
      line({ ...ok, verify: { answer: { has_word: 'x' } } }),
      `${TASK}verify.answer has an unknown operator "has_word"`,
      'verify.answer',
    ],
    [
      'parts with nothing in them',
      line({ ...ok, verify: { parts: {} } }),
      `${TASK}verify.parts must name at least one part`,
      'verify.parts',
    ],
    [
      'parts beside another verifier',
      line({ ...ok, verify: { parts: { a: { command: 'true' } }, command: 'true' } }),
      `${TASK}verify with "parts" has nothing else`,
      'verify',
    ],
    [
      'a bad part name',
      line({ ...ok, verify: { parts: { 'no spaces': { command: 'true' } } } }),
      `${TASK}verify.parts: "no spaces" is no part name`,
      'verify.parts',
    ],
    [
      'a part with a bad check',
      line({ ...ok, verify: { parts: { format: { answer: { max_words: 0 } } } } }),
      `${TASK}verify.parts.format.answer.max_words must be a positive integer`,
      'verify.parts.format.answer.max_words',
    ],
    [
      'a part with an unknown field',
      line({ ...ok, verify: { parts: { content: { script: 'x' } } } }),
      `${TASK}verify.parts.content has an unknown field "script"`,
      'verify.parts.content.script',
    ],
    ['max_turns 0', line({ ...ok, max_turns: 0 }), `${TASK}max_turns must be a positive integer of at most 100, got 0`, 'max_turns'],
    ['max_turns 1.5', line({ ...ok, max_turns: 1.5 }), `${TASK}max_turns must be a positive integer`, 'max_turns'],
    [
      'timeout_s "60"',
      line({ ...ok, timeout_s: '60' }),
      `${TASK}timeout_s must be a positive number of at most 3600, got "60"`,
      'timeout_s',
    ],
    [
      'a bad split',
      line({ ...ok, split: 'held' }),
      `${TASK}split must be "train", "dev" or "test" ("eval" is read as "test"), got "held"`,
      'split',
    ],
    ['a file path with ..', line({ ...ok, files: { '../x': 'a' } }), `${TASK}files["../x"]: a file path must be relative`, 'files["../x"]'],
    [
      'an absolute file path',
      line({ ...ok, files: { '/etc/x': 'a' } }),
      `${TASK}files["/etc/x"]: a file path must be relative`,
      'files["/etc/x"]',
    ],
    ['file content not text', line({ ...ok, files: { 'a.txt': 3 } }), `${TASK}files["a.txt"] must be a string`, 'files["a.txt"]'],
    ['files not an object', line({ ...ok, files: ['a.txt'] }), `${TASK}files must be an object`, 'files'],
  ];
  for (const [what, text, start, param] of cases) {
    it(`refuses ${what} in one line naming the line, task and field`, () => {
      const r = suiteRefusal(text);
      assert.equal(r.code, 'TS_ERR_INVALID_INPUT');
      assert.ok(r.message.startsWith(start), `${JSON.stringify(r.message)} starts with ${JSON.stringify(start)}`);
      assert.equal(r.message.includes('\n'), false, 'one line');
      assert.equal(r.param, param);
    });
  }

  it('refuses an empty suite', () => {
    assert.equal(suiteRefusal('\n\n').message, 'suite.jsonl: no tasks (one JSON object a line)');
  });

  it('loadTaskSuite names the file by its name; a missing file is one line too', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ts-gym-suite-'));
    try {
      const file = join(dir, 'mine.jsonl');
      await writeFile(file, `${line(ok)}\n${line({ ...ok, id: 'two', tools: ['sed'] })}\n`);
      await assert.rejects(loadTaskSuite(file), { message: /^mine\.jsonl: line 2: task "two": tools\[0\] "sed" is not a tool/ });
      await assert.rejects(loadTaskSuite(join(dir, 'none.jsonl')), {
        code: 'TS_ERR_INVALID_INPUT',
        message: /none\.jsonl: cannot read the task suite/,
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

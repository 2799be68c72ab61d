/** Actions written as fenced code blocks in a reply, as the built-in agent takes them. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseCodeBlocks } from '../../../gym/agent/code-blocks.ts';

describe('parseCodeBlocks', () => {
  it('takes bash, sh and python blocks (and their aliases) in order; other blocks are part of the answer', () => {
    const reply = [
      'First:',
      '```bash',
      'ls -la',
      '```',
      'then',
      '```python',
      'print(2 + 3)',
      'print("done")',
      '```',
      '```json',
      '{"a": 1}',
      '```',
      '```',
      'no language',
      '```',
      '```SH',
      'echo hi',
      '```',
      '~~~py',
      'x = 1',
      '~~~',
      '```shell title="x"',
      'pwd',
      '```',
    ].join('\n');
    assert.deepEqual(parseCodeBlocks(reply), [
      { language: 'bash', code: 'ls -la', unclosed: false },
      { language: 'python', code: 'print(2 + 3)\nprint("done")', unclosed: false },
      { language: 'bash', code: 'echo hi', unclosed: false },
      { language: 'python', code: 'x = 1', unclosed: false },
      { language: 'bash', code: 'pwd', unclosed: false },
    ]);
  });

  it('no block, an empty block or prose alone is no action', () => {
    assert.deepEqual(parseCodeBlocks('The answer is 42.'), []);
    assert.deepEqual(parseCodeBlocks('```bash\n\n```'), []);
    assert.deepEqual(parseCodeBlocks('Use `ls` to list files.'), []);
  });

  it('a block left open counts only when the reply ended by itself', () => {
    const reply = 'Here:\n```bash\necho hi > a.txt';
    assert.deepEqual(parseCodeBlocks(reply), []);
    assert.deepEqual(parseCodeBlocks(reply, { acceptUnclosed: true }), [{ language: 'bash', code: 'echo hi > a.txt', unclosed: true }]);
  });

  it('a closing fence is as long as the opening at least; a shorter one stays inside the block', () => {
    assert.deepEqual(parseCodeBlocks('````bash\necho ```\n```\n````'), [{ language: 'bash', code: 'echo ```\n```', unclosed: false }]);
    assert.deepEqual(parseCodeBlocks('```bash\necho a\n~~~\n```'), [{ language: 'bash', code: 'echo a\n~~~', unclosed: false }]);
  });

  it('a shell transcript ($ prompts) runs as the commands it shows', () => {
    assert.deepEqual(parseCodeBlocks('```console\n$ mkdir docs\n$ ls\n```'), [
      { language: 'bash', code: 'mkdir docs\nls', unclosed: false },
    ]);
    assert.deepEqual(parseCodeBlocks('```bash\n$ ls\noutput\n```')[0].code, '$ ls\noutput', 'not every line a prompt: kept as is');
  });

  it('CRLF replies parse the same', () => {
    assert.deepEqual(parseCodeBlocks('```sh\r\necho a\r\n```\r\n'), [{ language: 'bash', code: 'echo a', unclosed: false }]);
  });
});

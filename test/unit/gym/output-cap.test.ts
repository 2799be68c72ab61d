/** A command's output kept up to one limit while it streams: the parent holds no more however much comes. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OutputCap } from '../../../gym/sandbox/output-cap.ts';

describe('output capped while it streams', () => {
  it('100 MB fed in 64 KiB chunks: 1 MiB kept, the rest dropped as it arrives', () => {
    const cap = new OutputCap(1024 * 1024);
    const chunk = Buffer.alloc(64 * 1024, 'x');
    let accepted = 0;
    let maxHeld = 0;
    for (let sent = 0; sent < 100_000_000; sent += chunk.length) {
      if (cap.push('stdout', chunk)) accepted++;
      maxHeld = Math.max(maxHeld, cap.bytes);
    }
    assert.equal(accepted, 16, 'the chunks that fit, and no more');
    assert.equal(maxHeld, 1024 * 1024, 'never more than the limit held');
    assert.equal(cap.truncated, true);
    assert.equal(cap.text('stdout').length, 1024 * 1024);
  });

  it('stdout and stderr share the limit; the chunk that crosses it is cut at the limit', () => {
    const cap = new OutputCap(10);
    assert.equal(cap.push('stdout', Buffer.from('abcdef')), true);
    assert.equal(cap.push('stderr', Buffer.from('ghijkl')), false);
    assert.deepEqual([cap.text('stdout'), cap.text('stderr'), cap.truncated], ['abcdef', 'ghij', true]);
    assert.equal(cap.push('stdout', Buffer.from('z')), false, 'nothing more once cut');
    assert.equal(cap.text('stdout'), 'abcdef');
  });

  it('output that ends exactly at the limit is whole, not truncated', () => {
    const cap = new OutputCap(4);
    assert.equal(cap.push('stdout', Buffer.from('abcd')), true);
    assert.equal(cap.truncated, false);
    assert.equal(cap.text('stdout'), 'abcd');
  });

  it('a character cut at the limit reads as U+FFFD, never as broken bytes', () => {
    const cap = new OutputCap(4);
    cap.push('stdout', Buffer.from('abcé'));
    assert.equal(cap.text('stdout'), 'abc\uFFFD');
  });
});

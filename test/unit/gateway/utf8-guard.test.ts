/** UTF-8 validity token by token: the states, and the tokens each state bans (grammar-constrained answers stay valid UTF-8). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BOUNDARY, Utf8Bans, Utf8Track, utf8Step } from '../../../gateway/utf8-guard.ts';

const bytes = (s: string): number[] => [...Buffer.from(s, 'utf8')];

test('valid UTF-8 steps through, split anywhere; invalid bytes are caught where they break it', () => {
  for (const text of ['plain', 'café', '€ and 😀', 'ÿ']) {
    const all = bytes(text);
    for (let cut = 0; cut <= all.length; cut++) {
      const mid = utf8Step(BOUNDARY, all.slice(0, cut));
      assert.ok(mid, `${text} up to byte ${cut}`);
      assert.deepEqual(utf8Step(mid, all.slice(cut)), BOUNDARY, `${text} split at ${cut}`);
    }
  }
  assert.deepEqual(utf8Step(BOUNDARY, [0xc3]), { need: 1, lo: 0x80, hi: 0xbf }, 'a lead byte waits for its continuation');
  for (const bad of [
    [0x80],
    [0xc3, 0x41],
    [0xc0, 0x80],
    [0xe0, 0x80, 0x80],
    [0xed, 0xa0, 0x80],
    [0xf4, 0x90, 0x80, 0x80],
    [0xf5],
    [0xff],
  ]) {
    assert.equal(utf8Step(BOUNDARY, bad), null, `${bad.map((b) => b.toString(16))} is not UTF-8`);
    assert.throws(() => new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array(bad)), 'the strict decoder agrees');
  }
});

test('each state bans what would break UTF-8 from there; the track follows the answer', () => {
  const vocab = [bytes('a'), [0xc3], [0xa9], bytes('é'), [0x80, 0x41], null];
  const bans = new Utf8Bans((id) => vocab[id], vocab.length);
  assert.deepEqual(bans.banned(BOUNDARY), [2, 4], 'at a boundary: a continuation byte first');
  const inside = utf8Step(BOUNDARY, [0xc3])!;
  assert.deepEqual(bans.banned(inside), [0, 1, 3, 5], 'inside a character: only a continuation (then anything valid)');
  const made: Array<readonly number[]> = [];
  const track = new Utf8Track(bans, (banned) => (made.push(banned), banned.length));
  assert.equal(track.bias(), 2);
  track.advance([0xc3]);
  assert.equal(track.bias(), 4);
  track.advance([0xa9]);
  track.advance(null);
  assert.equal(track.bias(), 2);
  assert.equal(made.length, 2, 'one bias per state, made once');
});

/** The personas' declarative checks: every operator, their compositions, the edge cases, and the errors. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CHECK_OPERATORS, compileCheck, wordCount } from '../../../measure/check-language.ts';
import { TurnstreamError } from '../../../core/errors.ts';

const ok = (check: unknown, reply: string): boolean => compileCheck(check)(reply);

/** The one-line error a bad check gets. */
function errorOf(check: unknown): string {
  try {
    compileCheck(check);
  } catch (err) {
    assert.ok(err instanceof TurnstreamError);
    assert.equal(err.code, 'TS_ERR_INVALID_INPUT');
    return err.message;
  }
  assert.fail(`${JSON.stringify(check)} compiled`);
}

describe('persona checks', () => {
  it('regex_present / regex_absent: a JavaScript regex source, flags through {regex, flags}', () => {
    assert.equal(ok({ regex_present: '\\bvery\\b' }, 'It is very good.'), true);
    assert.equal(ok({ regex_present: '\\bvery\\b' }, 'It is Very good.'), false, 'case matters without the i flag');
    assert.equal(ok({ regex_present: { regex: '\\bvery\\b', flags: 'i' } }, 'It is Very good.'), true);
    assert.equal(ok({ regex_absent: { regex: '\\bvery\\b', flags: 'i' } }, 'Everything is fine.'), true, 'a word boundary');
    assert.equal(ok({ regex_absent: { regex: '\\bvery\\b', flags: 'i' } }, 'VERY fine.'), false);
    assert.equal(ok({ regex_absent: { regex: '\\p{Extended_Pictographic}', flags: 'u' } }, 'Sunny ☀️ today'), false);
    assert.equal(ok({ regex_present: '/usr/' }, 'see /usr/bin'), true, 'no /…/flags shorthand: slashes are literal');
    // Anchors see the trimmed reply.
    assert.equal(ok({ regex_present: '^Sure' }, '  Sure, here it is.\n'), true);
    assert.equal(ok({ regex_present: 'it is\\.$' }, 'Here it is.  \n'), true);
  });

  it('regex_count_at_least: non-overlapping matches, at least n', () => {
    const bullets = { regex_count_at_least: [{ regex: '^\\s*[-*•] ', flags: 'm' }, 3] };
    assert.equal(ok(bullets, '- eggs\n- toast\n- fruit'), true);
    assert.equal(ok(bullets, '- eggs\n- toast'), false);
    assert.equal(ok({ regex_count_at_least: ['aa', 2] }, 'aaa'), false, 'matches do not overlap');
    assert.equal(ok({ regex_count_at_least: ['aa', 2] }, 'aaaa'), true);
    assert.equal(ok({ regex_count_at_least: ['x*', 3] }, 'ab'), true, 'empty matches count and do not loop forever');
  });

  it('max_words / min_words count whitespace-separated tokens; max_chars counts code points', () => {
    assert.equal(wordCount(''), 0);
    assert.equal(wordCount('one'), 1);
    assert.equal(wordCount('one  two\n\tthree —'), 4, 'a dash between spaces is a token');
    assert.equal(ok({ max_words: 3 }, 'one two three'), true);
    assert.equal(ok({ max_words: 3 }, ' one two three four '), false);
    assert.equal(ok({ min_words: 3 }, 'one two'), false);
    assert.equal(ok({ min_words: 3 }, 'one two three'), true);
    assert.equal(ok({ max_chars: 5 }, '  héllo  '), true, 'trimmed, one code point per letter');
    assert.equal(ok({ max_chars: 2 }, '👍👍'), true, 'an emoji is one code point, not two UTF-16 units');
    assert.equal(ok({ max_chars: 5 }, 'hello!'), false);
  });

  it('starts_with / ends_with: exact after trimming, case matters', () => {
    assert.equal(ok({ starts_with: 'Sure thing:' }, '\n Sure thing: tides follow the moon.'), true);
    assert.equal(ok({ starts_with: 'Sure thing:' }, 'sure thing: tides follow the moon.'), false);
    assert.equal(ok({ ends_with: 'Cheers!' }, 'Drink water. Cheers!  \n'), true);
    assert.equal(ok({ ends_with: 'Cheers!' }, 'Cheers! Drink water.'), false);
    assert.equal(ok({ ends_with: '?' }, 'Want more?'), true);
  });

  it('all / any / not compose, nested', () => {
    const check = {
      all: [
        { max_words: 12 },
        { any: [{ ends_with: '?' }, { ends_with: 'Cheers!' }] },
        { not: { regex_present: { regex: 'very', flags: 'i' } } },
      ],
    };
    assert.equal(ok(check, 'Tides follow the moon. Anything else?'), true);
    assert.equal(ok(check, 'Tides follow the moon. Cheers!'), true);
    assert.equal(ok(check, 'Tides follow the moon.'), false, 'neither ending');
    assert.equal(ok(check, 'Tides follow the Very moon. Cheers!'), false, 'the word to avoid');
    assert.equal(ok(check, 'Tides follow the moon and the sun and the wind and the sea. Cheers!'), false, 'too long');
    assert.equal(ok({ not: { not: { max_words: 2 } } }, 'a b'), true);
    assert.equal(ok({ all: [{ min_words: 2 }] }, 'a'), false);
    assert.equal(ok({ any: [{ min_words: 2 }] }, 'a b'), true);
  });

  it('an empty or all-whitespace reply satisfies nothing, not even not or regex_absent', () => {
    for (const check of [
      { max_words: 5 },
      { max_chars: 5 },
      { regex_absent: 'x' },
      { not: { min_words: 1 } },
      { any: [{ max_words: 1 }] },
    ]) {
      assert.equal(ok(check, ''), false, JSON.stringify(check));
      assert.equal(ok(check, ' \n\t '), false, JSON.stringify(check));
    }
    // Inside a composition, not of a failing check is true as usual.
    assert.equal(ok({ not: { min_words: 5 } }, 'short'), true);
  });

  it('a bad check is one message naming the path of the field', () => {
    const cases: Array<[unknown, string]> = [
      [{ all: [{ ends_with: '?' }, { max_words: 0 }] }, 'check.all[1].max_words must be a positive integer'],
      [{ max_words: 2.5 }, 'check.max_words must be a positive integer'],
      [{ min_words: '3' }, 'check.min_words must be a positive integer'],
      [{ max_chars: -1 }, 'check.max_chars must be a positive integer'],
      [{ max_wrds: 3 }, `check has an unknown operator "max_wrds" (known: ${CHECK_OPERATORS.join(', ')})`],
      [{ max_words: 3, ends_with: '?' }, 'check has 2 operators (max_words, ends_with); combine checks with "all": [...]'],
      [{}, `check is empty; it needs one operator (${CHECK_OPERATORS.join(', ')})`],
      ['short', `check must be an object with one operator (${CHECK_OPERATORS.join(', ')})`],
      [{ any: [] }, 'check.any must be a non-empty array of checks'],
      [{ not: [{ max_words: 3 }] }, `check.not must be an object with one operator (${CHECK_OPERATORS.join(', ')})`],
      [{ regex_present: '(' }, 'check.regex_present is not a valid regex: Invalid regular expression: /(/: Unterminated group'],
      [{ regex_present: '' }, 'check.regex_present must be a non-empty regex source (or {"regex", "flags"})'],
      [{ regex_absent: { regex: 'a', flags: 'g' } }, 'check.regex_absent.flags must be a string of the regex flags d, i, m, s, u, v'],
      [{ regex_absent: { source: 'a' } }, 'check.regex_absent has an unknown field "source" (a regex object has "regex" and "flags")'],
      [{ regex_absent: { regex: 7 } }, 'check.regex_absent.regex must be a non-empty regex source (or {"regex", "flags"})'],
      [{ regex_count_at_least: ['a'] }, 'check.regex_count_at_least must be [regex, n]'],
      [{ regex_count_at_least: ['a', 0] }, 'check.regex_count_at_least[1] must be a positive integer'],
      [{ starts_with: '' }, 'check.starts_with must be a non-empty string'],
      [{ ends_with: 'Cheers! ' }, 'check.ends_with must not end with whitespace (replies are trimmed)'],
      [{ starts_with: ' Sure' }, 'check.starts_with must not start with whitespace (replies are trimmed)'],
      [{ any: [{ all: [{ not: { ends_with: 3 } }] }] }, 'check.any[0].all[0].not.ends_with must be a non-empty string'],
    ];
    for (const [check, message] of cases) assert.equal(errorOf(check), message);
  });
});

/**
 * The persona file: validation (one line naming the persona and the field), the held-out split,
 * and the shipped files — their checks do what their preferences say, and the embedded judge
 * reads every correction as a −1 with a usable hint and every thanks as a +1.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  BUILTIN_PERSONAS_FILE,
  DEFAULT_PERSONAS_FILE,
  loadPersonas,
  openingMessages,
  parsePersonas,
  splitPrompts,
  type Persona,
} from '../../../eval/persona.ts';
import { createEmbeddedJudge } from '../../../processors/index.ts';
import type { TurnPair } from '../../../schemas/index.ts';
import { TurnstreamError } from '../../../core/errors.ts';
import { personaSpec } from '../../support/persona-spec.ts';
import { suiteTempDir } from '../../support/temp-dir.ts';

const good = personaSpec(
  'short-sue',
  'replies of at most 12 words',
  { max_words: 12 },
  {
    satisfied: ['great, short and sweet'],
    corrections: ['too long, keep it under a dozen words'],
    prompts: ['how do tides work', 'what is a good breakfast', 'why do cats purr', 'how do I fix a leak'],
  },
);

/** The message a bad file gets from loadPersonas. */
async function loadError(dir: string, content: unknown): Promise<string> {
  const file = join(dir, 'personas.json');
  await writeFile(file, typeof content === 'string' ? content : JSON.stringify(content));
  try {
    await loadPersonas(file);
  } catch (err) {
    assert.ok(err instanceof TurnstreamError, String(err));
    assert.equal(err.code, 'TS_ERR_INVALID_INPUT');
    assert.doesNotMatch(err.message, /\n/, 'one line');
    return err.message;
  }
  assert.fail(`${JSON.stringify(content)} loaded`);
}

describe('persona file', () => {
  const dir = suiteTempDir('ts-personas-');

  it('loads a valid file: the check compiled, the optional system prompt kept', async () => {
    const file = join(dir(), 'ok.json');
    await writeFile(file, JSON.stringify({ personas: [good, { ...good, name: 'sys-sid', system: 'You are a helpful assistant.' }] }));
    const [sue, sid] = await loadPersonas(file);
    assert.equal(sue.name, 'short-sue');
    assert.equal(sue.accepts('Tides follow the moon.'), true);
    assert.equal(sue.accepts('Tides rise and fall twice a day because the moon and the sun pull on the oceans.'), false);
    assert.equal(sue.system, undefined);
    assert.deepEqual(openingMessages(sue, 'hi'), [{ role: 'user', content: 'hi' }]);
    assert.deepEqual(openingMessages(sid, 'hi'), [
      { role: 'system', content: 'You are a helpful assistant.' },
      { role: 'user', content: 'hi' },
    ]);
  });

  it('a bad file is one line naming the file, the persona and the field', async () => {
    const p = (over: Record<string, unknown>, drop?: string): Record<string, unknown> => {
      const o: Record<string, unknown> = { ...good, ...over };
      if (drop) delete o[drop];
      return o;
    };
    const cases: Array<[unknown, string]> = [
      ['{"personas": [', `personas.json: not JSON: ${jsonError('{"personas": [')}`],
      [[good], 'personas.json: must be a JSON object {"personas": [...]}'],
      [{ personas: [] }, 'personas.json: "personas" must be a non-empty array'],
      [{ personas: [good], version: 2 }, 'personas.json: unknown top-level field "version" (the file has one field, "personas")'],
      [{ personas: ['short-sue'] }, 'personas.json: personas[0] must be an object'],
      [
        { personas: [p({}, 'name')] },
        'personas.json: personas[0]: name must be 1–64 letters, digits, - and _ (starting with a letter or digit)',
      ],
      [
        { personas: [good, p({ name: 'short sue' })] },
        'personas.json: personas[1]: name must be 1–64 letters, digits, - and _ (starting with a letter or digit)',
      ],
      [{ personas: [good, good] }, 'personas.json: persona "short-sue": name is used twice (personas[0] and personas[1])'],
      [
        { personas: [p({ thanks: ['ta'] })] },
        'personas.json: persona "short-sue": unknown field "thanks" (fields: name, preference, check, satisfied, corrections, prompts, system)',
      ],
      [
        { personas: [p({ preference: '' })] },
        'personas.json: persona "short-sue": preference must be a non-empty string (what the persona wants, for people)',
      ],
      [{ personas: [p({}, 'check')] }, 'personas.json: persona "short-sue": check is missing'],
      [
        { personas: [p({ check: { all: [{ ends_with: '?' }, { max_words: 0 }] } })] },
        'personas.json: persona "short-sue": check.all[1].max_words must be a positive integer',
      ],
      [
        { personas: [p({ check: { regex_present: { regex: '[a-', flags: 'i' } } })] },
        'personas.json: persona "short-sue": check.regex_present.regex is not a valid regex: Invalid regular expression: /[a-/i: Unterminated character class',
      ],
      [
        { personas: [p({ satisfied: [] })] },
        'personas.json: persona "short-sue": satisfied must be an array of at least 1 non-empty string (has 0)',
      ],
      [{ personas: [p({}, 'satisfied')] }, 'personas.json: persona "short-sue": satisfied must be an array of at least 1 non-empty string'],
      [{ personas: [p({ corrections: ['ok', '  '] })] }, 'personas.json: persona "short-sue": corrections[1] must be a non-empty string'],
      [
        { personas: [p({ corrections: 'shorter please' })] },
        'personas.json: persona "short-sue": corrections must be an array of at least 1 non-empty string',
      ],
      [
        { personas: [p({ prompts: ['a', 'b', 'c'] })] },
        'personas.json: persona "short-sue": prompts must be an array of at least 4 non-empty strings (has 3)',
      ],
      [{ personas: [p({ prompts: ['a', 'b', 'c', 'b'] })] }, 'personas.json: persona "short-sue": prompts[3] repeats prompts[1]'],
      [{ personas: [p({ system: 3 })] }, 'personas.json: persona "short-sue": system must be a non-empty string when given'],
    ];
    for (const [content, message] of cases) assert.equal(await loadError(dir(), content), message);
  });

  it('parsePersonas validates JSON already parsed, named after its source', () => {
    assert.throws(() => parsePersonas({ personas: [{ ...good, check: { max_chars: 'ten' } }] }, 'inline'), {
      message: 'inline: persona "short-sue": check.max_chars must be a positive integer',
    });
  });
});

/** V8's own message for bad JSON (it differs across Node versions). */
function jsonError(text: string): string {
  try {
    JSON.parse(text);
  } catch (err) {
    return (err as Error).message;
  }
  return '';
}

describe('splitPrompts', () => {
  const prompts = (n: number) => ({ prompts: Array.from({ length: n }, (_, i) => `p${i}`) });

  it('holds out 3 of 8 by default, spread over the list, the same every time', () => {
    const s = splitPrompts(prompts(8));
    assert.deepEqual(s.heldOut, ['p1', 'p4', 'p6']);
    assert.deepEqual(s.train, ['p0', 'p2', 'p3', 'p5', 'p7']);
    assert.deepEqual(splitPrompts(prompts(8)), s, 'deterministic: no seed enters');
  });

  it('is disjoint and covers every prompt, at least one held out and one trained', () => {
    for (let n = 2; n <= 40; n++) {
      for (const share of [0.01, 0.2, 3 / 8, 0.5, 0.8, 0.99]) {
        const { train, heldOut } = splitPrompts(prompts(n), { heldOut: share });
        assert.ok(heldOut.length >= 1 && train.length >= 1, `n=${n} share=${share}`);
        assert.equal(train.length + heldOut.length, n);
        assert.deepEqual([...train, ...heldOut].sort(), prompts(n).prompts.sort());
        assert.equal(heldOut.length, Math.min(n - 1, Math.max(1, Math.round(share * n))));
      }
    }
  });

  it('refuses a share outside (0, 1)', () => {
    for (const share of [0, 1, -0.5, Number.NaN])
      assert.throws(() => splitPrompts(prompts(8), { heldOut: share }), /the held-out share must be between 0 and 1/);
  });
});

describe('the shipped persona files', () => {
  const judge = createEmbeddedJudge({ mode: 'combined' });
  const reply = (text: string): TurnPair =>
    ({ feedback: [], nextState: [{ role: 'USER', content: text, toolCallId: null }] }) as unknown as TurnPair;

  it('every correction is a −1 with a usable hint, every thanks a +1, for the embedded judge', async () => {
    for (const file of [DEFAULT_PERSONAS_FILE, BUILTIN_PERSONAS_FILE]) {
      for (const p of await loadPersonas(file)) {
        for (const c of p.corrections) {
          const v = judge.evaluate(reply(c));
          assert.equal(v.score, -1, `${p.name}: ${c}`);
          assert.ok(v.hint && v.hint.length > 10, `${p.name}: ${c} → hint ${v.hint}`);
        }
        for (const s of p.satisfied) assert.equal(judge.evaluate(reply(s)).score, 1, `${p.name}: ${s}`);
      }
    }
  });

  it('personas.json: at least 16 personas, 8 prompts each, and each check does what its preference says', async () => {
    const personas = await loadPersonas();
    assert.ok(personas.length >= 16, `${personas.length} personas`);
    for (const p of personas) {
      assert.equal(p.prompts.length, 8, p.name);
      assert.ok(p.satisfied.length >= 3 && p.corrections.length >= 3, p.name);
    }
    // One reply each persona likes and one it does not (the second is the first's typical miss).
    const examples: Record<string, [string, string]> = {
      'short-sue': [
        'The moon pulls the sea up and down.',
        'The moon pulls on the oceans, and as the earth turns the water rises and falls twice a day.',
      ],
      'brief-ben': ['A pump moves heat out of the box.', 'A fridge pumps a refrigerant around a loop; '.repeat(4)],
      'bullet-bo': ['- Oats with fruit\n- Eggs on toast\n* Yogurt', 'Oats with fruit, eggs on toast, or yogurt.'],
      'steps-nora': ['1. Mix flour and milk.\n2. Heat the pan.\n3) Fry both sides.', 'Mix flour and milk, heat the pan, fry both sides.'],
      'oneline-olga': ['Canberra is the capital of Australia.', 'Canberra.\nIt was chosen as a compromise between Sydney and Melbourne.'],
      'example-eli': [
        'Inflation is prices rising over time. For example, bread cost $1 and now costs $2.',
        'For example, bread cost $1 and now costs $2. For example, rent went up.',
      ],
      'formal-fiona': ['You should schedule a meeting and present your results.', "Hey, just ask! It's not that hard."],
      'cheers-chad': ['Try a pale ale. Cheers!', 'Cheers! Try a pale ale.'],
      'surething-suri': ['Sure thing: rainbows form when light bends in raindrops.', 'Rainbows form when light bends in raindrops.'],
      'lower-lou': ['try a slow piano playlist.', 'Try a slow piano playlist.'],
      'child-kim': ['The moon pulls the sea, so it goes up and down.', 'Tides are caused by gravitational interaction.'],
      'asking-abe': ['Oats are great. Do you like fruit?', 'Oats are great. Do you like fruit? Try them.'],
      'nutshell-nia': ['Shares are traded. In a nutshell, people buy parts of firms.', 'Shares are traded on exchanges.'],
      'bottomline-bea': [
        'Renting is flexible.\nBottom line: rent if you might move.',
        'Bottom line: rent if you might move.\nRenting is flexible.',
      ],
      'emoji-emma': ['Try hide and seek 🎉', 'Try hide and seek.'],
      'twosentence-tia': [
        'The earth is tilted. So the sun hits us at different angles.',
        'The earth is tilted. It orbits the sun. So seasons change.',
      ],
      'bold-bree': ['The key is **spending less than you earn**.', 'The key is spending less than you earn.'],
      'brief-asker-cleo': ['A salad with beans. What do you have at home?', 'A salad with beans.'],
      'concise-carl': ['Vaccines train the immune system with a harmless look-alike.', 'Vaccines train the immune system. '.repeat(12)],
      'oneparagraph-pia': ['Plants turn light, water and air into sugar.', 'Plants turn light into sugar.\n- water\n- air'],
    };
    assert.deepEqual(Object.keys(examples).sort(), personas.map((p) => p.name).sort(), 'an example pair for every persona');
    for (const p of personas) {
      const [yes, no] = examples[p.name];
      assert.equal(p.accepts(yes), true, `${p.name} accepts ${JSON.stringify(yes)}`);
      assert.equal(p.accepts(no), false, `${p.name} refuses ${JSON.stringify(no)}`);
    }
  });

  it('personas-builtin.json: the five preferences of the tiny model, checked as before', async () => {
    const byName = Object.fromEntries((await loadPersonas(BUILTIN_PERSONAS_FILE)).map((p) => [p.name, p])) as Record<string, Persona>;
    assert.deepEqual(Object.keys(byName).sort(), ['brief-bea', 'curious-quinn', 'formal-fran', 'named-sam', 'plain-pat']);
    const { 'brief-bea': short, 'curious-quinn': question, 'named-sam': greet, 'plain-pat': noEmoji, 'formal-fran': formal } = byName;
    assert.equal(short.accepts('Tea: boil water, steep 3 min.'), true);
    assert.equal(short.accepts('x'.repeat(61)), false);
    assert.equal(question.accepts('Steep it for three minutes. Want more tips? 🙂'), true, 'a trailing emoji after the ?');
    assert.equal(question.accepts('Steep it for three minutes.'), false);
    assert.equal(greet.accepts('Hi Sam! Steep it.'), true);
    assert.equal(greet.accepts('Hi Alex! Steep it.'), false, 'another name is no greeting for Sam');
    assert.equal(greet.accepts('Steep it, Sam.'), false);
    assert.ok(
      greet.prompts.every((q) => q.startsWith('Sam here. ')),
      'the greet persona introduces itself',
    );
    assert.equal(noEmoji.accepts('Steep it.'), true);
    assert.equal(noEmoji.accepts('Steep it ✨'), false);
    assert.equal(formal.accepts('Certainly. Steep it for three minutes.'), true);
    assert.equal(formal.accepts('Yeah, steep it.'), false);
    assert.equal(formal.accepts('Steep it!'), false);
    assert.equal(short.accepts('   '), false, 'an empty reply satisfies nobody');
  });
});

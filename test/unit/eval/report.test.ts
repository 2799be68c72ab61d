/** The eval's reports: the CSV, the JSON result, the SVG learning curves and their PNGs. */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inflateSync } from 'node:zlib';
import { describe, it } from 'node:test';
import {
  CSV_HEADER,
  perPersona,
  stability,
  toCsv,
  toPersonaSvg,
  toResultJson,
  toSvg,
  writeReports,
  type ReportInput,
} from '../../../eval/report.ts';
import { svgToPng } from '../../../measure/charts.ts';
import { summarize, type RunResult } from '../../../eval/run-eval.ts';
import type { Persona } from '../../../eval/persona.ts';

/** Two personas × two seeds, scored at 0, 4 and 8 interactions. */
function result(): ReportInput {
  const run = (persona: string, preference: string, seed: number, s: number[]): RunResult => ({
    persona,
    preference,
    seed,
    scores: s.map((satisfaction, i) => ({ version: i, interactions: 4 * i, satisfaction, answered: Math.min(1, satisfaction + 0.25) })),
    replies: {
      first: [{ prompt: 'how do tides work?', text: 'The moon pulls the sea <a lot>.', satisfied: false, answered: true }],
      last: [{ prompt: 'how do tides work?', text: 'The moon pulls.', satisfied: true, answered: true }],
    },
    talk: [
      { prompt: 'what is rain?', reply: 'Rain is water that falls from clouds.', reaction: 'too long', satisfied: false, version: 0 },
      { prompt: 'why is snow white?', reply: 'It scatters light.', reaction: 'thanks', satisfied: true, version: 1 },
    ],
    trainSatisfaction: 0.5,
    samples: 8,
    steps: [],
  });
  const runs = [
    run('short-sue', 'at most 12 words', 1, [0.25, 0.5, 0.75]),
    run('cheers-chad', 'ends with "Cheers!", <always>', 1, [0, 0.25, 0.5]),
    run('short-sue', 'at most 12 words', 2, [0.25, 0.75, 1]),
    run('cheers-chad', 'ends with "Cheers!", <always>', 2, [0, 0, 0.5]),
  ];
  const personas = [{ name: 'short-sue' }, { name: 'cheers-chad' }] as Persona[];
  return summarize(
    runs,
    { personas, interactions: 8, seeds: 2, method: 'combined', batchSize: 4, lr: 1e-4, heldOut: 3 / 8, heldOutSamples: 4 },
    { agree: 0, total: 0 },
    'in-process',
    12.5,
  );
}

/** Tags balance, attributes are quoted, text holds no raw < or bare &: enough of XML for a hand-written SVG. */
function assertWellFormed(svg: string): void {
  const stack: string[] = [];
  const tag = /<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/y;
  let i = svg.indexOf('<');
  assert.ok(svg.slice(0, i).trim() === '', 'nothing before the root');
  while (i < svg.length) {
    if (svg[i] === '<') {
      tag.lastIndex = i;
      const m = tag.exec(svg);
      assert.ok(m, `a malformed tag at ${i}: ${svg.slice(i, i + 60)}`);
      const [, close, name, , self] = m;
      if (close) assert.equal(stack.pop(), name, `</${name}> closes what was opened`);
      else if (!self) stack.push(name);
      i = tag.lastIndex;
    } else {
      const next = svg.indexOf('<', i);
      const text = svg.slice(i, next === -1 ? undefined : next);
      assert.doesNotMatch(text, /&(?!(?:#\d+|amp|lt|gt|quot|apos);)/, `a bare & in ${text}`);
      if (stack.length === 0) assert.equal(text.trim(), '', 'nothing after the root');
      i = next === -1 ? svg.length : next;
    }
  }
  assert.deepEqual(stack, [], 'every element closed');
}

/** An 8-bit RGBA, non-interlaced PNG (what resvg writes) as pixels. */
function decodePng(png: Buffer): { width: number; height: number; at: (x: number, y: number) => number[] } {
  const width = png.readUInt32BE(16);
  const height = png.readUInt32BE(20);
  assert.deepEqual([png[24], png[25], png[28]], [8, 6, 0], '8-bit RGBA, not interlaced');
  const idat: Buffer[] = [];
  for (let o = 8; o < png.length;) {
    const len = png.readUInt32BE(o);
    if (png.toString('ascii', o + 4, o + 8) === 'IDAT') idat.push(png.subarray(o + 8, o + 8 + len));
    o += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * 4;
  const out = Buffer.alloc(height * stride);
  for (let y = 0; y < height; y++) {
    const type = raw[y * (stride + 1)];
    for (let x = 0; x < stride; x++) {
      const v = raw[y * (stride + 1) + 1 + x];
      const a = x >= 4 ? out[y * stride + x - 4] : 0;
      const b = y > 0 ? out[(y - 1) * stride + x] : 0;
      const c = x >= 4 && y > 0 ? out[(y - 1) * stride + x - 4] : 0;
      const p = a + b - c;
      const paeth =
        Math.abs(p - a) <= Math.abs(p - b) && Math.abs(p - a) <= Math.abs(p - c) ? a : Math.abs(p - b) <= Math.abs(p - c) ? b : c;
      const pred = [0, a, b, (a + b) >> 1, paeth][type];
      out[y * stride + x] = (v + pred) & 0xff;
    }
  }
  return { width, height, at: (x, y) => [...out.subarray(y * stride + x * 4, y * stride + x * 4 + 4)] };
}

const series = (svg: string): string[] => [...svg.matchAll(/<path data-series="([^"]*)"/g)].map((m) => m[1]);

describe('eval reports', () => {
  it('CSV: the header, then one row per run and scored version, quoted where a cell needs it', () => {
    const lines = toCsv(result()).trimEnd().split('\n');
    assert.equal(lines[0], CSV_HEADER);
    assert.equal(lines[0], 'persona,preference,seed,version,interactions,satisfaction,answered,train_satisfaction');
    assert.equal(lines.length, 1 + 4 * 3);
    assert.equal(lines[1], 'short-sue,at most 12 words,1,0,0,0.2500,0.5000,0.5000');
    assert.equal(lines[4], 'cheers-chad,"ends with ""Cheers!"", <always>",1,0,0,0.0000,0.2500,0.5000');
    assert.equal(lines[12], 'cheers-chad,"ends with ""Cheers!"", <always>",2,2,8,0.5000,0.7500,0.5000');
  });

  it('JSON: before/after per persona (means over seeds), the p-value and the wall time', () => {
    const r = result();
    assert.deepEqual(perPersona(r), {
      'short-sue': { preference: 'at most 12 words', before: 0.25, after: 0.875, answered_before: 0.5, answered_after: 1, seeds: 2 },
      'cheers-chad': {
        preference: 'ends with "Cheers!", <always>',
        before: 0,
        after: 0.5,
        answered_before: 0.25,
        answered_after: 0.75,
        seeds: 2,
      },
    });
    const j = toResultJson(r, 1234);
    assert.equal(j.p_value, r.statistic.p);
    assert.equal(j.wall_s, 12.5);
    assert.equal(j.finished_at, 1234);
    assert.equal(j.before, 0.125);
    assert.equal(j.after, 0.6875);
    assert.deepEqual(j.answered, { before: 0.375, after: 0.875 }, 'the shares of replies that answer at all');
    assert.deepEqual(
      j.per_version.map((v) => v.answered),
      [0.375, 0.625, 0.875],
    );
    assert.deepEqual(
      j.per_version.map((v) => [v.interactions, v.satisfaction]),
      [
        [0, 0.125],
        [4, 0.375],
        [8, 0.6875],
      ],
    );
  });

  it('stability: a run that ends more than one eval step’s noise below its own peak is counted', () => {
    const run = (seed: number, sat: number[]) => ({
      persona: 'p',
      preference: 'x',
      seed,
      scores: sat.map((satisfaction, i) => ({ version: i, interactions: i * 4, satisfaction, answered: 1, replies: 12 })),
      trainSatisfaction: 0,
      samples: 0,
      steps: [],
    });
    const st = stability({ runs: [run(1, [0, 0.75, 0.5]), run(2, [0, 0.75, 0.67]), run(3, [0, 1, 1])] });
    // Peak 0.75 of 12: p̃ = (9 + 2)/16, noise = √(p̃(1 − p̃)/16) ≈ 0.116; 0.5 is below 0.75 − 0.116, 0.67 is not.
    assert.ok(Math.abs(st.runs[0].noise - Math.sqrt(((11 / 16) * (5 / 16)) / 16)) < 1e-12);
    assert.deepEqual(
      st.runs.map((x) => x.endsBelowPeak),
      [true, false, false],
    );
    assert.equal(st.endsBelowPeak, 1);
    assert.equal(toResultJson(result(), 1).stability.runs.length, 4);
  });

  it('stability: where a run measured its peak and last version again, the verdict reads those, and the curve’s is kept beside it', () => {
    const again = (peak: number, last: number) => ({
      peak: { version: 1, interactions: 4, satisfaction: peak, answered: 1, replies: 48 },
      last: { version: 2, interactions: 8, satisfaction: last, answered: 1, replies: 48 },
    });
    const run = (seed: number, sat: number[], remeasured?: ReturnType<typeof again>) => ({
      persona: 'p',
      preference: 'x',
      seed,
      scores: sat.map((satisfaction, i) => ({ version: i, interactions: i * 4, satisfaction, answered: 1, replies: 12 })),
      ...(remeasured ? { remeasured } : {}),
      trainSatisfaction: 0,
      samples: 0,
      steps: [],
    });
    // Both end 0.75 → 0.5 on the curve; measured again, one held (0.6 → 0.58), one did not (0.8 → 0.4).
    const st = stability({ runs: [run(1, [0, 0.75, 0.5], again(0.6, 0.58)), run(2, [0, 0.75, 0.5], again(0.8, 0.4))] });
    assert.deepEqual(
      st.runs.map((x) => [x.peak, x.final, x.endsBelowPeak, x.curve.endsBelowPeak, x.measuredAgain]),
      [
        [0.6, 0.58, false, true, 48],
        [0.8, 0.4, true, true, 48],
      ],
    );
    // The noise is still one eval step's (12 replies), at the peak measured again.
    const p = (0.6 * 12 + 2) / 16;
    assert.ok(Math.abs(st.runs[0].noise - Math.sqrt((p * (1 - p)) / 16)) < 1e-12);
    assert.equal(st.endsBelowPeak, 1);
    assert.equal(st.curveEndsBelowPeak, 2);
  });

  it('the curve has one point per checkpoint of interactions, also when runs reached it at different versions (the pipeline)', () => {
    const run = (seed: number, versions: number[], sat: number[]): RunResult => ({
      persona: 'short-sue',
      preference: 'at most 12 words',
      seed,
      scores: versions.map((version, i) => ({ version, interactions: 6 * i, satisfaction: sat[i], answered: 1 })),
      trainSatisfaction: 0,
      samples: 12,
      steps: [],
    });
    const persona = { name: 'short-sue', preference: 'at most 12 words' } as Persona;
    const r = summarize(
      [run(1, [0, 4, 7], [0, 0.5, 1]), run(2, [0, 5, 9], [0, 0.25, 0.5])],
      { personas: [persona], interactions: 12, seeds: 2, method: 'combined', batchSize: 2, lr: 1e-3, heldOut: 0.375, heldOutSamples: 4 },
      { agree: 0, total: 0 },
      'pipeline',
      1,
    );
    assert.deepEqual(
      r.per_version.map((v) => [v.interactions, v.version, v.satisfaction]),
      [
        [0, 0, 0],
        [6, 5, 0.375],
        [12, 9, 0.75],
      ],
    );
  });

  it('SVG: the overall curve has a line per persona and the mean; a persona curve has its seeds and their mean', () => {
    const r = result();
    const overall = toSvg(r);
    assertWellFormed(overall);
    assert.deepEqual(series(overall), ['short-sue', 'cheers-chad', 'mean']);
    // The mean goes through (0, 0.125) … (8, 0.6875): x from 60 to 560, y = 58 + (1 − v) × 312.
    assert.match(overall, /data-series="mean" d="M60\.0,331\.0 L310\.0,253\.0 L560\.0,155\.5"/);
    assert.match(overall, /before 0\.13 → after 0\.69/);
    const sue = toPersonaSvg(r, 'short-sue');
    assertWellFormed(sue);
    assert.deepEqual(series(sue), ['seed 1', 'seed 2', 'mean']);
    assert.match(sue, />short-sue<\/text>\n<text [^>]*>at most 12 words</);
    assert.match(sue, /before 0\.25 → after 0\.88, mean of 2 seeds/);
    const chad = toPersonaSvg(r, 'cheers-chad');
    assertWellFormed(chad);
    assert.match(chad, />ends with &#34;Cheers!&#34;, &#60;always&#62;</, 'text is escaped');
  });

  it('writes eval.csv, eval.json, eval.svg and a curve per persona, each with a PNG', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ts-eval-report-'));
    try {
      const w = await writeReports(result(), dir);
      assert.equal(w.pngSkipped, null, 'the PNG renderer loaded');
      assert.deepEqual(w.svg, [join(dir, 'eval.svg'), join(dir, 'curves', 'short-sue.svg'), join(dir, 'curves', 'cheers-chad.svg')]);
      assert.deepEqual(
        w.png,
        w.svg.map((f) => f.replace(/\.svg$/, '.png')),
      );
      const json = JSON.parse(await readFile(w.json, 'utf8')) as { per_persona: Record<string, unknown>; runs: unknown[] };
      assert.deepEqual(Object.keys(json.per_persona), ['short-sue', 'cheers-chad']);
      assert.equal(json.runs.length, 4);
      assert.equal((await readFile(w.csv, 'utf8')).split('\n')[0], CSV_HEADER);
      for (const png of w.png) {
        const bytes = await readFile(png);
        assert.deepEqual([...bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'a PNG signature');
        assert.ok((await stat(png)).size > 5000, `${png} has content`);
      }
      const replies = await readFile(join(dir, 'replies.md'), 'utf8');
      assert.equal(replies.match(/^## /gm)?.length, 4, 'a section per run');
      assert.match(
        replies,
        /## short-sue, seed 1 \(at most 12 words\)\n\nbefore: version 0, satisfaction 0\.25, answered 0\.50\n\n- ✗ \*\*how do tides work\?\*\* → "The moon pulls the sea <a lot>\."/,
      );
      assert.match(replies, /after: version 2, satisfaction 0\.75, answered 1\.00\n\n- ✓ \*\*how do tides work\?\*\* → "The moon pulls\."/);
      assert.match(
        replies,
        /interactions \(trained on\):\n\n1\. v0 ✗ \*\*what is rain\?\*\* → "Rain is water that falls from clouds\." — "too long"\n2\. v1 ✓ \*\*why is snow white\?\*\* → "It scatters light\." — "thanks"/,
      );
      const without = await writeReports(result(), join(dir, 'no-png'), { png: false });
      assert.deepEqual(without.png, []);
      assert.equal(without.pngSkipped, 'not asked for');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('the PNG is the SVG drawn: the mean line is black where the SVG puts it, the background white', async () => {
    const png = await svgToPng(toSvg(result()));
    assert.ok(png);
    const img = decodePng(png);
    assert.deepEqual([img.width, img.height], [760, 420]);
    // The bold mean line's middle point, (310, 253), and a blank spot above the plot.
    assert.ok(
      img
        .at(310, 253)
        .slice(0, 3)
        .every((c) => c < 60),
      `mean line pixel ${img.at(310, 253)}`,
    );
    assert.deepEqual(img.at(400, 50), [255, 255, 255, 255]);
  });
});

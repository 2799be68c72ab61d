/** The evaluation's CSV and its learning-curve plot (a hand-written SVG, no dependency). */
import type { EvalResult } from './run-eval.ts';

export function toCsv(r: EvalResult): string {
  const lines = ['persona,preference,seed,version,interactions,satisfaction'];
  for (const run of r.runs) {
    for (const s of run.scores)
      lines.push([run.persona, run.preference, run.seed, s.version, s.interactions, s.satisfaction.toFixed(4)].join(','));
  }
  return lines.join('\n') + '\n';
}

const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f'];
const esc = (s: string): string => s.replace(/[<>&"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[c]!);

/** Satisfaction on held-out prompts vs interactions: one thin line per persona, the mean in bold. */
export function toSvg(r: EvalResult): string {
  const W = 720;
  const H = 420;
  const m = { l: 60, r: 170, t: 50, b: 50 };
  const pw = W - m.l - m.r;
  const ph = H - m.t - m.b;
  const maxX = Math.max(1, ...r.per_version.map((v) => v.interactions));
  const x = (v: number): number => m.l + (v / maxX) * pw;
  const y = (v: number): number => m.t + (1 - v) * ph;
  const path = (pts: Array<[number, number]>): string =>
    pts.map(([a, b], i) => `${i ? 'L' : 'M'}${x(a).toFixed(1)},${y(b).toFixed(1)}`).join(' ');
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`);
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  out.push(
    `<text x="${m.l}" y="22" font-size="15" font-weight="bold">Held-out satisfaction per weight version (${esc(r.method)}, ${r.mode}, ${r.seeds} seeds)</text>`,
  );
  out.push(
    `<text x="${m.l}" y="40" fill="#555">before ${r.before.toFixed(2)} → after ${r.after.toFixed(2)}; ${esc(r.statistic.test)} p = ${r.statistic.p.toPrecision(2)} (n = ${r.statistic.n})</text>`,
  );
  for (let i = 0; i <= 5; i++) {
    const v = i / 5;
    out.push(`<line x1="${m.l}" x2="${m.l + pw}" y1="${y(v)}" y2="${y(v)}" stroke="#eee"/>`);
    out.push(`<text x="${m.l - 8}" y="${y(v) + 4}" text-anchor="end">${v.toFixed(1)}</text>`);
  }
  for (const v of r.per_version)
    out.push(`<text x="${x(v.interactions)}" y="${m.t + ph + 18}" text-anchor="middle">${v.interactions}</text>`);
  out.push(
    `<text x="${m.l + pw / 2}" y="${H - 10}" text-anchor="middle">interactions per persona (one weight version every ${r.batchSize})</text>`,
  );
  out.push(`<text transform="translate(16,${m.t + ph / 2}) rotate(-90)" text-anchor="middle">satisfaction rate</text>`);
  out.push(
    `<line x1="${m.l}" x2="${m.l}" y1="${m.t}" y2="${m.t + ph}" stroke="#333"/><line x1="${m.l}" x2="${m.l + pw}" y1="${m.t + ph}" y2="${m.t + ph}" stroke="#333"/>`,
  );
  const personas = Object.keys(r.per_version[0]?.byPersona ?? {});
  personas.forEach((p, i) => {
    const pts = r.per_version.filter((v) => p in v.byPersona).map((v) => [v.interactions, v.byPersona[p]] as [number, number]);
    const c = COLORS[i % COLORS.length];
    out.push(`<path d="${path(pts)}" fill="none" stroke="${c}" stroke-width="1.5" opacity="0.8"/>`);
    out.push(`<text x="${m.l + pw + 10}" y="${m.t + 16 * i + 10}" fill="${c}">${esc(p)}</text>`);
  });
  out.push(`<path d="${path(r.per_version.map((v) => [v.interactions, v.satisfaction]))}" fill="none" stroke="black" stroke-width="3"/>`);
  out.push(`<text x="${m.l + pw + 10}" y="${m.t + 16 * personas.length + 14}" font-weight="bold">mean</text>`);
  out.push('</svg>');
  return out.join('\n') + '\n';
}

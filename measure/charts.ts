/**
 * Learning curves as hand-written SVG (one line per seed, their mean in bold), rendered to PNG by
 * @resvg/resvg-js (prebuilt, no native build) where it loads. Eval's and gym's reports draw with it.
 */

/** The series colours, in order. */
export const CHART_COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
const esc = (s: string): string => s.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);

export interface Series {
  /** Legend label (also the path's `data-series`). */
  label: string;
  points: Array<[number, number]>;
  color: string;
  width: number;
  dash?: string;
  /** Circles on the first and last points (before/after). */
  ends?: boolean;
}

/** One thin dashed line per seed, and their mean in bold (drawn last, on top). */
export function seedSeries(
  seeds: Array<{ seed: number; points: Array<[number, number]> }>,
  mean: { label: string; points: Array<[number, number]> },
): Series[] {
  const series: Series[] = seeds.map((run, i) => ({
    label: `seed ${run.seed}`,
    points: run.points,
    color: CHART_COLORS[i % CHART_COLORS.length],
    width: 1.2,
    dash: '4 3',
  }));
  return [...series, { ...mean, color: 'black', width: 3, ends: true }];
}

/** A line chart of a share (0–1) against `xLabel`; the legend on the right. */
export function lineChart(
  title: string,
  subtitles: string[],
  xLabel: string,
  xs: number[],
  series: Series[],
  yLabel = 'held-out satisfaction',
): string {
  const W = 760;
  const m = { l: 60, r: 200, t: 40 + 18 * subtitles.length, b: 50 };
  const H = Math.max(420, m.t + 16 * series.length + 40);
  const pw = W - m.l - m.r;
  const ph = H - m.t - m.b;
  const maxX = Math.max(1, ...xs);
  const x = (v: number): string => (m.l + (v / maxX) * pw).toFixed(1);
  const y = (v: number): string => (m.t + (1 - v) * ph).toFixed(1);
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="DejaVu Sans, sans-serif" font-size="12">`,
  );
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  out.push(`<text x="${m.l}" y="22" font-size="15" font-weight="bold">${esc(title)}</text>`);
  subtitles.forEach((line, i) => out.push(`<text x="${m.l}" y="${42 + 18 * i}" fill="#555">${esc(line)}</text>`));
  for (let i = 0; i <= 5; i++) {
    const v = i / 5;
    out.push(`<line x1="${m.l}" x2="${m.l + pw}" y1="${y(v)}" y2="${y(v)}" stroke="#eee"/>`);
    out.push(`<text x="${m.l - 8}" y="${(Number(y(v)) + 4).toFixed(1)}" text-anchor="end">${v.toFixed(1)}</text>`);
  }
  for (const v of [...new Set(xs)].sort((a, b) => a - b))
    out.push(`<text x="${x(v)}" y="${m.t + ph + 18}" text-anchor="middle">${v}</text>`);
  out.push(`<text x="${m.l + pw / 2}" y="${H - 10}" text-anchor="middle">${esc(xLabel)}</text>`);
  out.push(`<text transform="translate(16,${m.t + ph / 2}) rotate(-90)" text-anchor="middle">${esc(yLabel)}</text>`);
  out.push(`<line x1="${m.l}" x2="${m.l}" y1="${m.t}" y2="${m.t + ph}" stroke="#333"/>`);
  out.push(`<line x1="${m.l}" x2="${m.l + pw}" y1="${m.t + ph}" y2="${m.t + ph}" stroke="#333"/>`);
  series.forEach((s, i) => {
    if (s.points.length === 0) return;
    const d = s.points.map(([a, b], k) => `${k ? 'L' : 'M'}${x(a)},${y(b)}`).join(' ');
    const dash = s.dash ? ` stroke-dasharray="${s.dash}"` : '';
    out.push(`<path data-series="${esc(s.label)}" d="${d}" fill="none" stroke="${s.color}" stroke-width="${s.width}"${dash}/>`);
    if (s.ends) {
      const first = s.points[0];
      const last = s.points[s.points.length - 1];
      for (const [a, b] of [first, last]) out.push(`<circle cx="${x(a)}" cy="${y(b)}" r="4" fill="${s.color}"/>`);
      // The before/after values beside their points.
      out.push(
        `<text x="${Number(x(first[0])) + 6}" y="${Number(y(first[1])) - 8}" font-weight="bold" stroke="white" stroke-width="3" paint-order="stroke">${first[1].toFixed(2)}</text>`,
      );
      out.push(
        `<text x="${Number(x(last[0])) - 6}" y="${Number(y(last[1])) - 8}" font-weight="bold" text-anchor="end" stroke="white" stroke-width="3" paint-order="stroke">${last[1].toFixed(2)}</text>`,
      );
    }
    const ly = m.t + 16 * i + 10;
    out.push(
      `<line x1="${m.l + pw + 12}" x2="${m.l + pw + 32}" y1="${ly - 4}" y2="${ly - 4}" stroke="${s.color}" stroke-width="${s.width}"${dash}/>`,
    );
    out.push(`<text x="${m.l + pw + 38}" y="${ly}" fill="${s.color === 'black' ? '#000' : s.color}">${esc(s.label)}</text>`);
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}

type Renderer = (svg: string) => Buffer;
let renderer: Renderer | null | undefined;
/** Why PNGs are not rendered here (the import's error), once tried. */
let rendererError: string | null = null;

/** Why no PNG was rendered (the renderer's import error), or null. */
export const pngRendererError = (): string | null => rendererError;

/**
 * An SVG as PNG through @resvg/resvg-js with the system fonts, or null where the package (its
 * prebuilt binary for this platform) does not load.
 */
export async function svgToPng(svg: string): Promise<Buffer | null> {
  if (renderer === undefined) {
    try {
      const { Resvg } = await import('@resvg/resvg-js');
      renderer = (s) => new Resvg(s, { font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' } }).render().asPng();
    } catch (err) {
      // PNGs are optional: the SVGs are written regardless, and writeReports says why none came.
      renderer = null;
      rendererError = `@resvg/resvg-js did not load: ${(err as Error).message.split('\n')[0]}`;
    }
  }
  return renderer ? renderer(svg) : null;
}

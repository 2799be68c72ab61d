/** Headless Chromium (Debian's) for the dashboard tests, driven by playwright-core. */
import { chromium, type BrowserContext } from 'playwright-core';

/** The browser (`CHROMIUM_PATH`, or Debian's package, which .ci/run installs). */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** A browser with its profile in `profileDir` (the caller removes it). */
export function launchChromium(profileDir: string): Promise<BrowserContext> {
  return chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: 1400, height: 1500 },
  });
}

/** Browser-side code (a string: the project compiles without the DOM library): the pixels with ink on each canvas. */
export const CANVAS_INK = `[...document.querySelectorAll('canvas')].map((c) => {
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let painted = 0;
  for (let i = 3; i < d.length; i += 4) if (d[i] > 0) painted++;
  return { id: c.id, painted, total: d.length / 4 };
})`;

/** What {@link CANVAS_INK} returns. */
export type CanvasInk = Array<{ id: string; painted: number; total: number }>;

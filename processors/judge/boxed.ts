/** Reading a judge's answer: only the LAST `\boxed{…}` counts, and the last hint block. */

const BOXED = /\\boxed\{([^{}]*)\}/g;
const HINT = /\[HINT_START\]([\s\S]*?)\[HINT_END\]/g;

/** The score in the last `\boxed{…}` of `text`: 1, 0 or -1; anything else (or none) is null. */
export function parseBoxed(text: string | null | undefined): 1 | 0 | -1 | null {
  if (!text) return null;
  let last: string | undefined;
  for (const m of text.matchAll(BOXED)) last = m[1];
  if (last === undefined) return null;
  const v = last
    .trim()
    .replace(/^\+/, '')
    .replace(/^[\u2212\u2013]/, '-');
  if (v === '1') return 1;
  if (v === '0' || v === '-0') return 0;
  if (v === '-1') return -1;
  return null;
}

/** The text of the last `[HINT_START] … [HINT_END]` block, trimmed, or null. */
export function parseHint(text: string | null | undefined): string | null {
  if (!text) return null;
  let last: string | undefined;
  for (const m of text.matchAll(HINT)) last = m[1];
  const hint = last?.trim();
  return hint ? hint : null;
}

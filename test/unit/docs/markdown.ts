/**
 * Reading Markdown as GitHub renders it, for the docs tests: the repository's Markdown files, the
 * links in one, and the anchors its headings get (GitHub's slugs, as github-slugger makes them).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** Folders never searched: dependencies, build output and what a run leaves behind. */
const SKIPPED = new Set(['node_modules', 'dist', 'scratch', 'tmp', 'target']);

/**
 * Every Markdown file of the repository, relative to its root: tracked ones and new ones not
 * ignored (git ls-files), or, without git, every `.md` outside dot-folders and SKIPPED.
 */
export function markdownFiles(): string[] {
  try {
    const out = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z', '--', '*.md'], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    return [...new Set(out.split('\0').filter(Boolean))].sort();
  } catch {
    const files: string[] = [];
    const walk = (dir: string): void => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        if (e.name.startsWith('.') || SKIPPED.has(e.name)) continue;
        const p = join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.name.endsWith('.md')) files.push(relative(ROOT, p));
      }
    };
    walk(ROOT);
    return files.sort();
  }
}

/** The lines of `text` outside fenced code blocks: as written, and with inline code spans blanked out. */
function proseLines(text: string): { raw: string; line: string; n: number }[] {
  const out: { raw: string; line: string; n: number }[] = [];
  let fence: string | undefined;
  text.split('\n').forEach((line, i) => {
    const f = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (f) {
      if (fence === undefined) fence = f[1][0];
      else if (f[1][0] === fence) fence = undefined;
      return;
    }
    if (fence !== undefined) return;
    out.push({ raw: line, line: line.replace(/(`+)(?:(?!\1)[\s\S])*?\1/g, (m) => ' '.repeat(m.length)), n: i + 1 });
  });
  return out;
}

export interface Link {
  target: string;
  line: number;
}

/** Inline links and images (`[text](target "title")`) and reference definitions (`[id]: target`). */
export function links(text: string): Link[] {
  const found: Link[] = [];
  for (const { line, n } of proseLines(text)) {
    for (const m of line.matchAll(/\]\(\s*(<[^>]*>|[^\s)]+)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)/g)) {
      found.push({ target: m[1].replace(/^<|>$/g, ''), line: n });
    }
    const def = /^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)/.exec(line);
    if (def) found.push({ target: def[1].replace(/^<|>$/g, ''), line: n });
  }
  return found;
}

/** A heading's text as GitHub renders it: links become their text, images and HTML tags go. */
function headingText(raw: string): string {
  return raw
    .replace(/!\[[^\]]*\]\([^)]*\)/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .trim();
}

/** GitHub's slug of a heading (github-slugger): lower case, punctuation and symbols dropped, spaces to `-`. */
export function slug(heading: string): string {
  return headingText(heading)
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors a Markdown file offers: its headings' slugs (repeats get -1, -2, …) and HTML ids and names. */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const { raw, line } of proseLines(text)) {
    const h = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(raw);
    if (h) {
      const base = slug(h[1]);
      const k = seen.get(base) ?? 0;
      seen.set(base, k + 1);
      out.add(k === 0 ? base : `${base}-${k}`);
    }
    for (const m of line.matchAll(/<[a-z]+\s[^>]*\b(?:id|name)="([^"]+)"/gi)) out.add(m[1]);
  }
  return out;
}

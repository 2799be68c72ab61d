/**
 * Every relative link in the repository's Markdown (README.md, docs/, results/, any other) leads
 * to a file or folder inside the repository, and a `#anchor` into a Markdown file names one of
 * its headings as GitHub slugs them. External links (http:, mailto:, …) are not fetched.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { test } from 'node:test';
import { anchors, links, markdownFiles, ROOT, slug } from './markdown.ts';

const anchorCache = new Map<string, Set<string>>();
const anchorsOf = (file: string): Set<string> => {
  let a = anchorCache.get(file);
  if (!a) anchorCache.set(file, (a = anchors(readFileSync(file, 'utf8'))));
  return a;
};

/** What is wrong with `target`, linked from `file` (absolute), or undefined when it resolves. */
function problem(file: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) return undefined; // external
  const hash = target.indexOf('#');
  const pathPart = hash === -1 ? target : target.slice(0, hash);
  const anchor = hash === -1 ? undefined : decodeURIComponent(target.slice(hash + 1));
  let path: string;
  try {
    path = decodeURIComponent(pathPart.split('?')[0]);
  } catch {
    return 'not a valid URL path';
  }
  const to = path === '' ? file : path.startsWith('/') ? join(ROOT, path) : resolve(dirname(file), path);
  const inRepo = relative(ROOT, to);
  if (inRepo.startsWith('..') || inRepo.startsWith(sep)) return `leads outside the repository (${inRepo})`;
  if (!existsSync(to)) return `no such file or folder: ${inRepo}`;
  if (anchor !== undefined && to.endsWith('.md') && statSync(to).isFile() && !anchorsOf(to).has(anchor)) {
    return `${inRepo || relative(ROOT, file)} has no heading with the anchor #${anchor}`;
  }
  return undefined;
}

test('every relative link in the Markdown files resolves, anchors included', () => {
  const files = markdownFiles();
  assert.ok(files.includes('README.md') && files.some((f) => f.startsWith('docs/')), 'README.md and docs/ are found');
  const broken: string[] = [];
  let checked = 0;
  for (const f of files) {
    const abs = join(ROOT, f);
    for (const { target, line } of links(readFileSync(abs, 'utf8'))) {
      checked++;
      const why = problem(abs, target);
      if (why) broken.push(`${f}:${line}: (${target}) ${why}`);
    }
  }
  assert.ok(checked > 100, `links were found (${checked})`);
  assert.deepEqual(broken, [], `broken links:\n${broken.join('\n')}`);
});

test("GitHub's heading slugs", () => {
  assert.equal(slug('The `turnstream` command'), 'the-turnstream-command');
  assert.equal(slug('turnstream — architecture'), 'turnstream--architecture');
  assert.equal(slug('History: import, replay, many users'), 'history-import-replay-many-users');
  assert.equal(slug('6b. LoRA on a real model, served by another engine'), '6b-lora-on-a-real-model-served-by-another-engine');
  assert.equal(slug('Many users, one model (`turnstream train --no-consensus`)'), 'many-users-one-model-turnstream-train---no-consensus');
  assert.equal(slug('See [the docs](docs/x.md) and TRAIN_LR'), 'see-the-docs-and-train_lr');
  const a = anchors('# A\n\n```\n# not a heading\n```\n\n## A\n\n## B #\n<a id="here"></a>\n');
  assert.deepEqual([...a].sort(), ['a', 'a-1', 'b', 'here']);
});

test('links are found outside code, anchors and titles included', () => {
  const found = links('[a](x.md#y) `[b](not-a-link)` ![c](img.png "title")\n```\n[d](in-code)\n```\n[e]: ref.md\n');
  assert.deepEqual(
    found.map((l) => l.target),
    ['x.md#y', 'img.png', 'ref.md'],
  );
  assert.equal(problem(join(ROOT, 'README.md'), '../outside.md')?.startsWith('leads outside'), true);
  assert.equal(problem(join(ROOT, 'README.md'), 'https://example.com/x'), undefined);
  assert.match(problem(join(ROOT, 'README.md'), '#no-such-heading') ?? '', /no heading/);
});

/** What `turnstream model list` shows: the catalog, and which models the cache holds. */
import { readdir, stat } from 'node:fs/promises';
import { basename, join, relative, sep } from 'node:path';
import { MODEL_CATALOG, type CatalogModel } from './catalog.ts';

/** One model the catalog knows or the cache holds. */
export interface ListedModel {
  /** What `--model` takes. */
  name: string;
  source: 'builtin' | 'catalog' | 'hf';
  /** Whether the file is in the cache (always true for `builtin`, which needs none). */
  cached: boolean;
  path?: string;
  bytes?: number;
  description?: string;
  license?: string;
  contextLength?: number;
}

async function ggufFilesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => []);
  return entries.filter((e) => e.isFile() && e.name.endsWith('.gguf')).map((e) => join(e.parentPath ?? e.path, e.name));
}

/** The catalog (with cache status), `builtin`, and every Hugging Face file in the cache. */
export async function listModels(options: { cacheDir: string; catalog?: readonly CatalogModel[] }): Promise<ListedModel[]> {
  const out: ListedModel[] = [
    { name: 'builtin', source: 'builtin', cached: true, description: 'the tiny built-in tfjs model (for tests; 192-byte context)' },
  ];
  for (const m of options.catalog ?? MODEL_CATALOG) {
    const path = join(options.cacheDir, m.name, basename(m.source.member));
    const bytes = await stat(path).then(
      (s) => s.size,
      () => undefined,
    );
    out.push({
      name: m.name,
      source: 'catalog',
      cached: bytes === m.source.memberBytes,
      ...(bytes !== undefined ? { path, bytes } : {}),
      description: m.description,
      license: m.license,
      contextLength: m.contextLength,
    });
  }
  // Cached hub files live at hf/<org>/<repo>/<revision>/<file>.
  const hfDir = join(options.cacheDir, 'hf');
  for (const path of (await ggufFilesUnder(hfDir)).sort()) {
    const [org, repo, revision, ...file] = relative(hfDir, path).split(sep);
    if (!org || !repo || !revision || file.length === 0) continue;
    out.push({
      name: `hf:${org}/${repo}/${file.join('/')}@${decodeURIComponent(revision)}`,
      source: 'hf',
      cached: true,
      path,
      bytes: (await stat(path)).size,
    });
  }
  return out;
}

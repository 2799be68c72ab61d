/**
 * What `--model` accepts: `builtin`, a catalog name, a path to a GGUF file, or
 * `hf:ORG/REPO/FILE.gguf[@REVISION]` on the Hugging Face hub.
 */
import { homedir } from 'node:os';
import { isAbsolute, resolve } from 'node:path';
import { ErrorCodes, TurnstreamError } from '../../core/index.ts';
import { MODEL_CATALOG, catalogModel, type CatalogModel } from './catalog.ts';

/** A parsed model spec. */
export type ModelSpec =
  | { kind: 'builtin' }
  | { kind: 'catalog'; model: CatalogModel }
  | { kind: 'path'; path: string }
  | { kind: 'hf'; org: string; repo: string; file: string; revision: string };

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const REVISION = /^[A-Za-z0-9][A-Za-z0-9._/-]*$/;

/** A string usable as a model id (`^[A-Za-z0-9][A-Za-z0-9._-]*$`) made from any name. */
export function toModelId(name: string): string {
  const id = name
    .replace(/\.gguf$/i, '')
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 128);
  return id || 'model';
}

/**
 * Parses a model spec. A spec that names no catalog model and does not look like a path
 * (`.gguf`, a `/`, a leading `.` or `~`) is an unknown name.
 * @throws TurnstreamError TS_ERR_INVALID_INPUT for a malformed `hf:` spec; TS_ERR_NOT_FOUND for an unknown name
 */
export function parseModelSpec(spec: string, options: { cwd?: string; catalog?: readonly CatalogModel[] } = {}): ModelSpec {
  const s = spec.trim();
  const catalog = options.catalog ?? MODEL_CATALOG;
  if (s === '') throw new TurnstreamError(ErrorCodes.INVALID_INPUT, 'empty model spec', { param: 'model' });
  if (s.toLowerCase() === 'builtin') return { kind: 'builtin' };
  if (s.startsWith('hf:')) {
    const bad = (why: string): TurnstreamError =>
      new TurnstreamError(
        ErrorCodes.INVALID_INPUT,
        `model "${s}": ${why}; expected hf:ORG/REPO/FILE.gguf or hf:ORG/REPO/FILE.gguf@REVISION`,
        {
          param: 'model',
        },
      );
    const body = s.slice(3);
    const at = body.lastIndexOf('@');
    const [path, revision] = at > 0 ? [body.slice(0, at), body.slice(at + 1)] : [body, 'main'];
    const [org, repo, ...rest] = path.split('/');
    const file = rest.join('/');
    if (!org || !repo || !file) throw bad('organization, repository and file are all needed');
    if (!NAME.test(org) || !NAME.test(repo)) throw bad('organization and repository are letters, digits, ".", "_" and "-"');
    if (rest.some((part) => !NAME.test(part))) throw bad('a file path of plain names (no "..", no empty parts)');
    if (!/\.gguf$/i.test(file)) throw bad('the file must be a .gguf');
    if (!REVISION.test(revision) || revision.includes('..')) throw bad(`revision "${revision}" is not a branch, tag or commit`);
    return { kind: 'hf', org, repo, file, revision };
  }
  const known = catalogModel(s, catalog);
  if (known) return { kind: 'catalog', model: known };
  if (/\.gguf$/i.test(s) || s.includes('/') || s.includes('\\') || s.startsWith('.') || s.startsWith('~')) {
    const expanded = s.startsWith('~/') ? resolve(homedir(), s.slice(2)) : s;
    return { kind: 'path', path: isAbsolute(expanded) ? expanded : resolve(options.cwd ?? process.cwd(), expanded) };
  }
  throw new TurnstreamError(
    ErrorCodes.NOT_FOUND,
    `unknown model "${s}": known names are ${['builtin', ...catalog.map((m) => m.name)].join(', ')}; or give a path to a .gguf file or hf:ORG/REPO/FILE.gguf`,
    { param: 'model' },
  );
}

/**
 * OpenAI message content → plain text. Clients (OpenClaw among them) send content as a string
 * or as an array of parts; the built-in model and the recorded Turn both need text.
 */
import { invalidInput } from '../core/index.ts';

/** The content part types of OpenAI's chat API. */
export const CONTENT_PART_TYPES = ['text', 'image_url', 'input_audio', 'file', 'refusal'] as const;
/** Text parts of the Responses API some clients send to chat completions too. */
const TEXT_TYPES = new Set(['text', 'input_text', 'output_text']);
const KNOWN = new Set<string>([...CONTENT_PART_TYPES, 'input_text', 'output_text']);

/** A lone UTF-16 surrogate: not text (a `\ud800` escape in JSON); it cannot be encoded as UTF-8. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** `s` if it is well-formed Unicode, else a 400 naming `param`. */
export function wellFormed(s: string, param: string): string {
  if (LONE_SURROGATE.test(s)) throw invalidInput(`Invalid '${param}': the string contains a lone surrogate (not valid Unicode).`, param);
  return s;
}

export interface FlattenOptions {
  /**
   * Keep part types turnstream does not know as placeholders (the engine, an upstream, may use
   * them); else they are a 400, as OpenAI answers. @default false
   */
  passThrough?: boolean;
}

const isObj = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** Checks the fields a known non-text part needs, as OpenAI does. */
function checkPart(type: string, part: Record<string, unknown>, p: string): void {
  const need = (field: string, inner: string): void => {
    const v = part[field];
    if (!isObj(v) || typeof v[inner] !== 'string')
      throw invalidInput(`Missing required parameter: '${p}.${field}.${inner}'.`, `${p}.${field}.${inner}`);
  };
  if (type === 'image_url') need('image_url', 'url');
  else if (type === 'input_audio') need('input_audio', 'data');
  else if (type === 'file' && !isObj(part.file)) throw invalidInput(`Missing required parameter: '${p}.file'.`, `${p}.file`);
}

/**
 * Flattens content: a string is kept; an array of parts becomes its text parts joined by
 * `\n` (`text`, `input_text`, `output_text`, `refusal`); a known non-text part (image, audio,
 * file) becomes a short placeholder such as `[image_url]` so the history keeps its shape; null
 * and a missing content become null. An unknown part type is a 400 (OpenAI's message), unless
 * `passThrough`.
 */
export function flattenContent(content: unknown, param = 'content', options: FlattenOptions = {}): string | null {
  if (content === null || content === undefined) return null;
  if (typeof content === 'string') return wellFormed(content, param);
  if (!Array.isArray(content)) throw invalidInput(`${param} must be a string, an array of content parts, or null`, param);
  const out: string[] = [];
  content.forEach((part, i) => {
    const p = `${param}[${i}]`;
    if (typeof part === 'string') return void out.push(wellFormed(part, p));
    if (!isObj(part)) throw invalidInput(`${p} must be a content part object`, p);
    const type = part.type;
    if (typeof type !== 'string') throw invalidInput(`${p}.type must be a string`, `${p}.type`);
    if (!KNOWN.has(type) && !options.passThrough) {
      throw invalidInput(
        `Invalid value: '${type.slice(0, 64)}'. Supported values are: ${CONTENT_PART_TYPES.map((t) => `'${t}'`).join(', ')}.`,
        `${p}.type`,
      );
    }
    if (TEXT_TYPES.has(type)) {
      const text = part.text;
      if (typeof text !== 'string') throw invalidInput(`${p}.text must be a string`, `${p}.text`);
      out.push(wellFormed(text, `${p}.text`));
    } else if (type === 'refusal') {
      const r = part.refusal;
      if (typeof r !== 'string') throw invalidInput(`${p}.refusal must be a string`, `${p}.refusal`);
      out.push(wellFormed(r, `${p}.refusal`));
    } else {
      if (KNOWN.has(type)) checkPart(type, part, p);
      out.push(`[${type.slice(0, 64)}]`);
    }
  });
  return out.join('\n');
}

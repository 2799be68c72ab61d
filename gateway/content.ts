/**
 * OpenAI message content → plain text. Clients (OpenClaw among them) send content as a string
 * or as an array of parts; the built-in model and the recorded Turn both need text.
 */
import { invalidInput } from '../streams/errors.ts';

/**
 * Flattens content: a string is kept; an array of parts becomes its text parts joined by
 * `\n` (`text`, `input_text`, `output_text`, `refusal`); a non-text part (image, audio, file)
 * becomes a short placeholder such as `[image_url]` so the history keeps its shape; null and
 * a missing content become null.
 */
export function flattenContent(content: unknown, param = 'content'): string | null {
  if (content === null || content === undefined) return null;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalidInput(`${param} must be a string, an array of content parts, or null`, param);
  const out: string[] = [];
  content.forEach((part, i) => {
    const p = `${param}[${i}]`;
    if (typeof part === 'string') return void out.push(part);
    if (!part || typeof part !== 'object') throw invalidInput(`${p} must be a content part object`, p);
    const type = (part as { type?: unknown }).type;
    if (typeof type !== 'string') throw invalidInput(`${p}.type must be a string`, `${p}.type`);
    if (type === 'text' || type === 'input_text' || type === 'output_text') {
      const text = (part as { text?: unknown }).text;
      if (typeof text !== 'string') throw invalidInput(`${p}.text must be a string`, `${p}.text`);
      out.push(text);
    } else if (type === 'refusal') {
      const r = (part as { refusal?: unknown }).refusal;
      if (typeof r === 'string') out.push(r);
    } else {
      out.push(`[${type}]`);
    }
  });
  return out.join('\n');
}

/**
 * OpenAI's `response_format`, validated as OpenAI does: `text` (the default), `json_object` (any
 * JSON object), or `json_schema` with a `name`, a JSON Schema and `strict`. Which engine can
 * honour which is the engine's call (llama.cpp through a grammar, an upstream as it will, the
 * built-in model not at all); this only checks the shape.
 */
import { invalidInput } from '../core/index.ts';

/** The answer's required shape. */
export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; name: string; description: string | null; schema: Record<string, unknown>; strict: boolean };

export const TEXT_FORMAT: ResponseFormat = Object.freeze({ type: 'text' });

const NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const isObj = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** `response_format` of a request body (absent or null: text). */
export function parseResponseFormat(v: unknown): ResponseFormat {
  if (v === undefined || v === null) return TEXT_FORMAT;
  if (!isObj(v)) throw invalidInput("Invalid type for 'response_format': expected an object.", 'response_format');
  switch (v.type) {
    case 'text':
      return TEXT_FORMAT;
    case 'json_object':
      return { type: 'json_object' };
    case 'json_schema': {
      const js = v.json_schema;
      const p = 'response_format.json_schema';
      if (!isObj(js)) throw invalidInput(`Missing required parameter: '${p}'.`, p);
      if (typeof js.name !== 'string' || !NAME.test(js.name)) {
        throw invalidInput(`Invalid '${p}.name': expected a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.`, `${p}.name`);
      }
      if (js.description !== undefined && js.description !== null && typeof js.description !== 'string')
        throw invalidInput(`Invalid type for '${p}.description': expected a string.`, `${p}.description`);
      if (js.strict !== undefined && js.strict !== null && typeof js.strict !== 'boolean')
        throw invalidInput(`Invalid type for '${p}.strict': expected a boolean.`, `${p}.strict`);
      if (!isObj(js.schema)) throw invalidInput(`Invalid '${p}.schema': expected an object (a JSON Schema).`, `${p}.schema`);
      return {
        type: 'json_schema',
        name: js.name,
        description: typeof js.description === 'string' ? js.description : null,
        schema: js.schema,
        strict: js.strict === true,
      };
    }
    default:
      throw invalidInput(
        `Invalid value for 'response_format.type': ${JSON.stringify(v.type)?.slice(0, 64)}. Supported values are: 'text', 'json_object' and 'json_schema'.`,
        'response_format.type',
      );
  }
}

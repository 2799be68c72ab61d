/**
 * A request's JSON Schema as the grammar llama.cpp samples under (node-llama-cpp's JSON-schema
 * grammars): every keyword kept is one the grammar enforces, so every answer that completes
 * validates against the schema the client sent. A keyword the grammar cannot enforce (`pattern`,
 * `minimum`, `uniqueItems`, `allOf`, …) is a 400 naming where it is, never dropped: an answer
 * that ignored it would not validate.
 *
 * What is enforced: `type` (one or several), `const` and `enum` of plain values, `anyOf`,
 * `$ref` to the root's `$defs` (or `definitions`), strings' `minLength`/`maxLength` and the
 * formats `date`, `time`, `date-time`, objects' `properties`/`required`/`additionalProperties`/
 * `minProperties`/`maxProperties` (every listed property is written, in order), arrays'
 * `items`/`prefixItems`/`minItems`/`maxItems`. Annotations (`title`, `description`, `default`,
 * `examples`, …) are allowed and have no effect on the answer. Numbers are written without an
 * exponent (`withoutExponents`).
 */
import { invalidInput } from '../core/index.ts';

/** The schema shape node-llama-cpp's `createGrammarForJsonSchema` takes (its `GbnfJsonSchema`). */
export type GrammarSchema = Record<string, unknown>;

const ANNOTATIONS = new Set([
  'title',
  'description',
  '$comment',
  'examples',
  'default',
  'deprecated',
  'readOnly',
  'writeOnly',
  '$schema',
  '$id',
  '$anchor',
]);
const PLAIN = new Set(['string', 'number', 'integer', 'boolean', 'null']);
const TYPES = new Set([...PLAIN, 'object', 'array']);
const FORMATS = new Set(['date', 'time', 'date-time']);
/** Keywords each type may carry (besides `type` and annotations). */
const BY_TYPE: Record<string, ReadonlySet<string>> = {
  string: new Set(['minLength', 'maxLength', 'format']),
  number: new Set(),
  integer: new Set(),
  boolean: new Set(),
  null: new Set(),
  object: new Set(['properties', 'required', 'additionalProperties', 'minProperties', 'maxProperties']),
  array: new Set(['items', 'prefixItems', 'minItems', 'maxItems']),
};
/** Keywords of some type: on a node of another type they constrain nothing (JSON Schema ignores them). */
const TYPED = new Set(Object.values(BY_TYPE).flatMap((s) => [...s]));

const isObj = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;

/** Why a keyword is refused, for the 400's message. */
function refusal(key: string): string {
  if (key === 'oneOf') return "'oneOf' is not supported; use 'anyOf'";
  if (key === '$defs' || key === 'definitions') return `'${key}' are supported at the schema's root only`;
  if (key === 'allOf' || key === 'not' || key === 'if' || key === 'then' || key === 'else') return `'${key}' is not supported`;
  return `'${key}' is not supported: the grammar the answer is sampled under cannot enforce it`;
}

class Converter {
  readonly defs: Record<string, GrammarSchema> = {};
  constructor(
    private readonly rawDefs: Record<string, unknown>,
    private readonly defsKey: string,
    private readonly root: string,
  ) {}

  node(s: unknown, path: string): GrammarSchema {
    if (s === true) return anyJson();
    if (!isObj(s)) throw invalidInput(`Invalid schema at '${path}': expected an object (a JSON Schema).`, path);
    const keys = Object.keys(s).filter((k) => !ANNOTATIONS.has(k));
    const only = (allowed: readonly string[]): void => {
      for (const k of keys)
        if (!allowed.includes(k)) throw invalidInput(`Invalid schema at '${path}.${k}': ${refusal(k)}.`, `${path}.${k}`);
    };
    if ('$ref' in s) {
      only(['$ref']);
      return this.ref(s.$ref, `${path}.$ref`);
    }
    if ('anyOf' in s) {
      only(['anyOf']);
      if (!Array.isArray(s.anyOf) || s.anyOf.length === 0)
        throw invalidInput(`Invalid schema at '${path}.anyOf': expected a non-empty array.`, `${path}.anyOf`);
      return { oneOf: s.anyOf.map((a, i) => this.node(a, `${path}.anyOf[${i}]`)) };
    }
    if ('const' in s || 'enum' in s) return literals(s, keys, path);
    if (keys.length === 0) return anyJson();
    if (!('type' in s)) {
      const k = keys[0];
      throw invalidInput(
        TYPED.has(k) ? `Invalid schema at '${path}': give a 'type' beside '${k}'.` : `Invalid schema at '${path}.${k}': ${refusal(k)}.`,
        TYPED.has(k) ? path : `${path}.${k}`,
      );
    }
    const types = typesOf(s.type, `${path}.type`);
    for (const k of keys) {
      if (k === 'type') continue;
      if (!TYPED.has(k)) throw invalidInput(`Invalid schema at '${path}.${k}': ${refusal(k)}.`, `${path}.${k}`);
    }
    const branches = types.map((t) => this.typed(s, t, path));
    if (branches.length === 1) return branches[0];
    // Several plain types with nothing else: one basic schema; otherwise one branch per type.
    if (branches.every((b) => Object.keys(b).length === 1)) return { type: types };
    return { oneOf: branches };
  }

  /** `s` read as a schema of type `t` (the keywords of other types ignored, as JSON Schema does). */
  private typed(s: Record<string, unknown>, t: string, path: string): GrammarSchema {
    if (t === 'string') return stringNode(s, path);
    if (t === 'object') return this.objectNode(s, path);
    if (t === 'array') return this.arrayNode(s, path);
    return { type: t };
  }

  private objectNode(s: Record<string, unknown>, path: string): GrammarSchema {
    const out: GrammarSchema = { type: 'object' };
    const props = s.properties ?? {};
    if (!isObj(props)) throw invalidInput(`Invalid schema at '${path}.properties': expected an object.`, `${path}.properties`);
    const names = Object.keys(props);
    const properties: Record<string, GrammarSchema> = {};
    for (const n of names) properties[n] = this.node(props[n], `${path}.properties.${n}`);
    if (names.length > 0) out.properties = properties;
    if (s.required !== undefined) {
      if (!Array.isArray(s.required) || !s.required.every((r) => typeof r === 'string'))
        throw invalidInput(`Invalid schema at '${path}.required': expected an array of strings.`, `${path}.required`);
      const missing = s.required.find((r) => !names.includes(r as string));
      if (missing !== undefined) {
        throw invalidInput(
          `Invalid schema at '${path}.required': ${JSON.stringify(missing)} is not in 'properties' (every required key must be described there).`,
          `${path}.required`,
        );
      }
    }
    const extra = s.additionalProperties;
    if (extra !== undefined && extra !== false) {
      out.additionalProperties = extra === true ? true : this.node(extra, `${path}.additionalProperties`);
    }
    const open = out.additionalProperties !== undefined;
    for (const k of ['minProperties', 'maxProperties'] as const) {
      if (s[k] === undefined) continue;
      if (!isCount(s[k])) throw invalidInput(`Invalid schema at '${path}.${k}': expected an integer ≥ 0.`, `${path}.${k}`);
    }
    // Every listed property is always written: a bound below that count, or above it with no room for more, cannot hold.
    if (isCount(s.maxProperties) && s.maxProperties < names.length) {
      throw invalidInput(
        `Invalid schema at '${path}.maxProperties': every property in 'properties' is written (${names.length}), more than ${s.maxProperties}.`,
        `${path}.maxProperties`,
      );
    }
    if (isCount(s.minProperties) && s.minProperties > names.length && !open) {
      throw invalidInput(
        `Invalid schema at '${path}.minProperties': ${s.minProperties} properties cannot be written with ${names.length} in 'properties' and no 'additionalProperties'.`,
        `${path}.minProperties`,
      );
    }
    if (open && isCount(s.minProperties)) out.minProperties = s.minProperties;
    if (open && isCount(s.maxProperties)) out.maxProperties = s.maxProperties;
    return out;
  }

  private arrayNode(s: Record<string, unknown>, path: string): GrammarSchema {
    const out: GrammarSchema = { type: 'array' };
    if (s.items !== undefined) {
      if (typeof s.items === 'boolean' && s.items) out.items = anyJson();
      else if (typeof s.items === 'boolean')
        throw invalidInput(`Invalid schema at '${path}.items': 'false' is not supported; use 'maxItems'.`, `${path}.items`);
      else out.items = this.node(s.items, `${path}.items`);
    }
    if (s.prefixItems !== undefined) {
      if (!Array.isArray(s.prefixItems))
        throw invalidInput(`Invalid schema at '${path}.prefixItems': expected an array.`, `${path}.prefixItems`);
      out.prefixItems = s.prefixItems.map((p, i) => this.node(p, `${path}.prefixItems[${i}]`));
    }
    for (const k of ['minItems', 'maxItems'] as const) {
      if (s[k] === undefined) continue;
      if (!isCount(s[k])) throw invalidInput(`Invalid schema at '${path}.${k}': expected an integer ≥ 0.`, `${path}.${k}`);
      out[k] = s[k];
    }
    const prefix = (out.prefixItems as unknown[] | undefined)?.length ?? 0;
    if (isCount(s.maxItems) && (s.maxItems < prefix || (isCount(s.minItems) && s.minItems > s.maxItems)))
      throw invalidInput(
        `Invalid schema at '${path}.maxItems': no array can have that many items and the others asked for.`,
        `${path}.maxItems`,
      );
    return out;
  }

  private ref(ref: unknown, path: string): GrammarSchema {
    const prefix = `#/${this.defsKey}/`;
    if (typeof ref !== 'string' || !ref.startsWith(prefix) || ref.slice(prefix.length).includes('/')) {
      throw invalidInput(
        `Invalid schema at '${path}': only references to the root's '${this.defsKey}' ("${prefix}<name>") are supported.`,
        path,
      );
    }
    const name = ref.slice(prefix.length);
    if (!Object.hasOwn(this.rawDefs, name)) throw invalidInput(`Invalid schema at '${path}': no definition ${JSON.stringify(name)}.`, path);
    if (!(name in this.defs)) {
      this.defs[name] = {}; // placeholder: a recursive reference stops here
      this.defs[name] = this.node(this.rawDefs[name], `${this.root}.${this.defsKey}.${name}`);
    }
    return { $ref: `#/$defs/${name}` };
  }
}

function typesOf(t: unknown, path: string): string[] {
  const list = Array.isArray(t) ? t : [t];
  if (list.length === 0 || !list.every((x) => typeof x === 'string' && TYPES.has(x))) {
    throw invalidInput(
      `Invalid schema at '${path}': expected one of ${[...TYPES].join(', ')} (or an array of them), got ${JSON.stringify(t)?.slice(0, 64)}.`,
      path,
    );
  }
  return [...new Set(list as string[])];
}

function stringNode(s: Record<string, unknown>, path: string): GrammarSchema {
  if (s.format !== undefined) {
    if (typeof s.format !== 'string' || !FORMATS.has(s.format)) {
      throw invalidInput(
        `Invalid schema at '${path}.format': ${JSON.stringify(s.format)?.slice(0, 64)} is not supported; the grammar enforces ${[...FORMATS].join(', ')}.`,
        `${path}.format`,
      );
    }
    if (s.minLength !== undefined || s.maxLength !== undefined)
      throw invalidInput(`Invalid schema at '${path}': 'format' and a length bound together are not supported.`, path);
    return { type: 'string', format: s.format };
  }
  const out: GrammarSchema = { type: 'string' };
  for (const k of ['minLength', 'maxLength'] as const) {
    if (s[k] === undefined) continue;
    if (!isCount(s[k])) throw invalidInput(`Invalid schema at '${path}.${k}': expected an integer ≥ 0.`, `${path}.${k}`);
    out[k] = s[k];
  }
  if (isCount(s.minLength) && isCount(s.maxLength) && s.minLength > s.maxLength)
    throw invalidInput(`Invalid schema at '${path}.maxLength': below 'minLength'.`, `${path}.maxLength`);
  return out;
}

/** `const` / `enum` of plain values (a `type` beside them must admit every value). */
function literals(s: Record<string, unknown>, keys: string[], path: string): GrammarSchema {
  for (const k of keys) {
    if (k !== 'const' && k !== 'enum' && k !== 'type')
      throw invalidInput(`Invalid schema at '${path}.${k}': ${refusal(k)} beside 'const'/'enum'.`, `${path}.${k}`);
  }
  if ('const' in s && 'enum' in s) throw invalidInput(`Invalid schema at '${path}': 'const' and 'enum' together are not supported.`, path);
  const key = 'const' in s ? 'const' : 'enum';
  const values = key === 'const' ? [s.const] : s.enum;
  if (!Array.isArray(values) || values.length === 0)
    throw invalidInput(`Invalid schema at '${path}.enum': expected a non-empty array.`, `${path}.enum`);
  values.forEach((v, i) => {
    if (v !== null && !['string', 'number', 'boolean'].includes(typeof v))
      throw invalidInput(
        `Invalid schema at '${path}.${key}${key === 'enum' ? `[${i}]` : ''}': only strings, numbers, booleans and null are supported.`,
        `${path}.${key}`,
      );
  });
  if ('type' in s) {
    const types = typesOf(s.type, `${path}.type`);
    const fits = (v: unknown): boolean =>
      types.some((t) =>
        t === 'null' ? v === null : t === 'integer' ? Number.isInteger(v) : t === 'number' ? typeof v === 'number' : typeof v === t,
      );
    const bad = values.find((v) => !fits(v));
    if (bad !== undefined)
      throw invalidInput(
        `Invalid schema at '${path}.${key}': ${JSON.stringify(bad)} is not of type ${types.join(' or ')}.`,
        `${path}.${key}`,
      );
  }
  return key === 'const' ? { const: s.const } : { enum: values };
}

/** Any JSON value. */
function anyJson(): GrammarSchema {
  return { oneOf: [{ type: 'object', additionalProperties: true }, { type: 'array' }, { type: ['string', 'number', 'boolean', 'null'] }] };
}

/**
 * node-llama-cpp 3.21.1's number rules allow an exponent of up to 16 digits: `1e999` parses as
 * Infinity (no JSON number, no integer) and `5e-3` is no integer. Numbers in the answer are
 * written without an exponent (16 digits before the point, 16 after, at most), which every
 * `number` and `integer` schema admits.
 */
const EXPONENT = ' ([eE] [-+]? ("0" | [1-9] [0-9]{0,15}))?';

/** A JSON-schema grammar's GBNF with numbers written without an exponent (see EXPONENT). */
export function withoutExponents(gbnf: string): string {
  return gbnf.replaceAll(EXPONENT, '');
}

/** `json_object`: any JSON object. */
export const ANY_OBJECT: GrammarSchema = Object.freeze({ type: 'object', additionalProperties: true });

/**
 * The grammar schema of a request's JSON Schema (at `param`, e.g.
 * `response_format.json_schema.schema`), or a 400 naming the first keyword the grammar cannot
 * enforce.
 */
export function grammarSchema(schema: Record<string, unknown>, param: string): GrammarSchema {
  const defsKey = '$defs' in schema ? '$defs' : 'definitions';
  if ('$defs' in schema && 'definitions' in schema)
    throw invalidInput(`Invalid schema at '${param}': give '$defs' or 'definitions', not both.`, param);
  const rawDefs = schema[defsKey] ?? {};
  if (!isObj(rawDefs)) throw invalidInput(`Invalid schema at '${param}.${defsKey}': expected an object.`, `${param}.${defsKey}`);
  const c = new Converter(rawDefs, defsKey, param);
  const { [defsKey]: _defs, ...rest } = schema;
  void _defs;
  const root = c.node(rest, param);
  for (const [name, def] of Object.entries(rawDefs)) if (!(name in c.defs)) c.node(def, `${param}.${defsKey}.${name}`); // unused ones are checked too
  return Object.keys(c.defs).length > 0 ? { ...wrapRoot(root), $defs: c.defs } : root;
}

/** `$defs` sit beside the root's own keywords; a root that is a bare `$ref` is wrapped so they can. */
function wrapRoot(root: GrammarSchema): GrammarSchema {
  return '$ref' in root ? { oneOf: [root] } : root;
}

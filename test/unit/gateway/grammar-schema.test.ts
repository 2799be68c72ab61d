/**
 * A request's JSON Schema as the grammar llama.cpp samples under: what it enforces is kept (in
 * node-llama-cpp's schema shape), annotations are dropped, and every keyword it cannot enforce
 * is a 400 naming where it is in the request.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TurnstreamError } from '../../../core/index.ts';
import { ANY_OBJECT, grammarSchema, withoutExponents } from '../../../gateway/grammar-schema.ts';

const P = 'response_format.json_schema.schema';

test('an OpenAI strict schema is kept as the grammar enforces it; annotations dropped, anyOf and several types become alternatives', () => {
  const schema = {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    title: 'Reply',
    type: 'object',
    properties: {
      answer: { type: 'string', description: 'the answer', maxLength: 40 },
      confidence: { type: 'number' },
      tags: { type: 'array', items: { type: 'string', enum: ['a', 'b'] }, minItems: 1, maxItems: 3 },
      note: { type: ['string', 'null'] },
      when: { anyOf: [{ type: 'string', format: 'date' }, { type: 'null' }] },
      kind: { const: 'reply' },
    },
    required: ['answer', 'confidence', 'tags', 'note', 'when', 'kind'],
    additionalProperties: false,
  };
  assert.deepEqual(grammarSchema(schema, P), {
    type: 'object',
    properties: {
      answer: { type: 'string', maxLength: 40 },
      confidence: { type: 'number' },
      tags: { type: 'array', items: { enum: ['a', 'b'] }, minItems: 1, maxItems: 3 },
      note: { type: ['string', 'null'] },
      when: { oneOf: [{ type: 'string', format: 'date' }, { type: 'null' }] },
      kind: { const: 'reply' },
    },
  });
  // A type list with keywords of its own types: one branch per type, each with its keywords.
  assert.deepEqual(grammarSchema({ type: ['string', 'array'], maxLength: 3, items: { type: 'integer' } }, P), {
    oneOf: [
      { type: 'string', maxLength: 3 },
      { type: 'array', items: { type: 'integer' } },
    ],
  });
  assert.deepEqual(grammarSchema({ type: 'object' }, P), { type: 'object' });
  assert.deepEqual(ANY_OBJECT, { type: 'object', additionalProperties: true });
});

test('$defs (or definitions) at the root and $ref to them, recursion included; unused definitions are checked too', () => {
  const tree = {
    type: 'object',
    properties: { root: { $ref: '#/definitions/node' } },
    definitions: {
      node: {
        type: 'object',
        properties: { value: { type: 'integer' }, children: { type: 'array', items: { $ref: '#/definitions/node' } } },
      },
    },
  };
  assert.deepEqual(grammarSchema(tree, P), {
    type: 'object',
    properties: { root: { $ref: '#/$defs/node' } },
    $defs: {
      node: { type: 'object', properties: { value: { type: 'integer' }, children: { type: 'array', items: { $ref: '#/$defs/node' } } } },
    },
  });
  // A root that is a reference keeps its definitions beside it.
  assert.deepEqual(grammarSchema({ $ref: '#/$defs/a', $defs: { a: { type: 'boolean' } } }, P), {
    oneOf: [{ $ref: '#/$defs/a' }],
    $defs: { a: { type: 'boolean' } },
  });
  assert.throws(
    () => grammarSchema({ type: 'object', $defs: { unused: { type: 'string', pattern: 'x' } } }, P),
    (e: TurnstreamError) => e.param === `${P}.$defs.unused.pattern`,
  );
});

const refused: Array<[string, Record<string, unknown>, string, RegExp]> = [
  ['a number bound', { type: 'integer', minimum: 0 }, `${P}.minimum`, /'minimum' is not supported/],
  ['a string pattern', { type: 'object', properties: { id: { type: 'string', pattern: '^a' } } }, `${P}.properties.id.pattern`, /pattern/],
  ['a format the grammar does not write', { type: 'string', format: 'email' }, `${P}.format`, /date, time, date-time/],
  ['a format with a length', { type: 'string', format: 'date', maxLength: 4 }, P, /format/],
  ['uniqueItems', { type: 'array', uniqueItems: true }, `${P}.uniqueItems`, /uniqueItems/],
  ['oneOf (use anyOf)', { oneOf: [{ type: 'string' }] }, `${P}.oneOf`, /use 'anyOf'/],
  ['allOf', { allOf: [{ type: 'string' }] }, `${P}.allOf`, /allOf/],
  ['not', { not: { type: 'string' } }, `${P}.not`, /not/],
  ['keywords beside anyOf', { anyOf: [{ type: 'string' }], maxLength: 3 }, `${P}.maxLength`, /maxLength/],
  ['patternProperties', { type: 'object', patternProperties: { '^x': {} } }, `${P}.patternProperties`, /patternProperties/],
  ['nested $defs', { type: 'array', items: { type: 'object', $defs: {} } }, `${P}.items.$defs`, /at the schema's root only/],
  ['a reference outside $defs', { $ref: 'https://example.com/s.json' }, `${P}.$ref`, /only references/],
  ['a reference to nothing', { $ref: '#/$defs/missing', $defs: {} }, `${P}.$ref`, /no definition "missing"/],
  [
    'required naming no property',
    { type: 'object', properties: { a: {} }, required: ['a', 'b'] },
    `${P}.required`,
    /"b" is not in 'properties'/,
  ],
  [
    'maxProperties below the properties',
    { type: 'object', properties: { a: {}, b: {} }, maxProperties: 1 },
    `${P}.maxProperties`,
    /written/,
  ],
  [
    'a closed object with too few properties',
    { type: 'object', properties: { a: {} }, minProperties: 2 },
    `${P}.minProperties`,
    /cannot be written/,
  ],
  ['items: false', { type: 'array', prefixItems: [{ type: 'string' }], items: false }, `${P}.items`, /maxItems/],
  ['keywords without a type', { properties: { a: {} } }, P, /give a 'type'/],
  ['an unknown type', { type: 'date' }, `${P}.type`, /expected one of/],
  ['an object in an enum', { enum: [{ a: 1 }] }, `${P}.enum`, /only strings, numbers, booleans and null/],
  ['an enum value of another type', { type: 'string', enum: ['a', 1] }, `${P}.enum`, /1 is not of type string/],
  ['a schema that is not an object', { type: 'object', properties: { a: 'string' } }, `${P}.properties.a`, /expected an object/],
  ['OpenAPI nullable', { type: 'string', nullable: true }, `${P}.nullable`, /nullable/],
];
for (const [name, schema, param, message] of refused) {
  test(`400 for ${name}, naming where it is`, () => {
    assert.throws(
      () => grammarSchema(schema, P),
      (e: unknown) => e instanceof TurnstreamError && e.code === 'TS_ERR_INVALID_INPUT' && e.param === param && message.test(e.message),
    );
  });
}

test('numbers are written without an exponent (1e999 is no JSON number, 5e-3 no integer)', () => {
  // node-llama-cpp 3.21.1's rules, as it writes them.
  const gbnf = [
    'fractional-number-rule ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? ("0" | [1-9] [0-9]{0,15}))?',
    'integer-number-rule ::= "-"? ("0" | [1-9] [0-9]{0,15}) ([eE] [-+]? ("0" | [1-9] [0-9]{0,15}))?',
  ].join('\n');
  assert.equal(
    withoutExponents(gbnf),
    [
      'fractional-number-rule ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})?',
      'integer-number-rule ::= "-"? ("0" | [1-9] [0-9]{0,15})',
    ].join('\n'),
  );
});

import { ConfigFileErrorCode } from './config-file-errors';
import { compile, refusal } from './spec-fixtures';

describe('compileJsonSchema: schemas that apply themselves to the same value', () => {
  // Audit finding 9: `{"$ref": "#"}` was accepted at upload, then every record overflowed the stack.
  it('refuses {"$ref": "#"} with a 400 naming the loop', () => {
    expect(refusal({ $ref: '#' })).toMatchObject({
      status: 400,
      domainCode: ConfigFileErrorCode.InvalidSchema,
      message:
        "'s.json' is not a valid JSON Schema: $ref at '#' leads back to '#' without moving into the value, " +
        'so validation would never end',
    });
  });

  it('refuses a loop through other keywords, definitions, ids and anchors', () => {
    const loops: [unknown, string][] = [
      [
        { allOf: [{ $ref: '#/$defs/a' }], $defs: { a: { anyOf: [{ $ref: '#' }] } } },
        "$ref at '#/$defs/a/anyOf/0'",
      ],
      [{ $id: 'http://example.com/s.json', not: { $ref: 'http://example.com/s.json' } }, "$ref at '#/not'"],
      [{ if: { required: ['a'] }, then: { $ref: '#' } }, "$ref at '#/then'"],
      [{ $dynamicAnchor: 'm', allOf: [{ $dynamicRef: '#m' }] }, "$dynamicRef at '#/allOf/0'"],
      [
        { $defs: { 'a/b': { not: { $ref: '#/$defs/a~1b' } } }, $ref: '#/$defs/a~1b' },
        "$ref at '#/$defs/a~1b/not'",
      ],
      [
        { $defs: { x: { $anchor: 'here', oneOf: [{ $ref: '#here' }] } }, $ref: '#here' },
        "$ref at '#/$defs/x/oneOf/0'",
      ],
      [
        {
          $id: 'http://example.com/root.json',
          $defs: { b: { $id: 'b.json', allOf: [{ $ref: 'b.json' }] } },
          $ref: 'b.json',
        },
        "$ref at '#/$defs/b/allOf/0'",
      ],
      // Reached through a property: the loop runs on that property's value.
      [
        {
          properties: { a: { $ref: '#/$defs/x' } },
          $defs: { x: { dependentSchemas: { k: { $ref: '#/$defs/x' } } } },
        },
        "$ref at '#/$defs/x/dependentSchemas/k'",
      ],
    ];
    for (const [schema, where] of loops) expect(refusal(schema)?.message).toContain(where);
  });

  it('accepts recursion that moves into the value, loops nothing uses, and $ref inside data', () => {
    const tree = compile({
      type: 'object',
      properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#' } } },
    });
    expect(tree({ name: 'a', children: [{ name: 'b', children: [] }] })).toBe(true);
    expect(tree({ name: 'a', children: [{ name: 1 }] })).toBe(false);
    const unused = compile({ type: 'object', $defs: { a: { $ref: '#/$defs/a' } } });
    expect(unused({})).toBe(true);
    const data = compile({
      properties: { const: { $ref: '#/$defs/n' } },
      $defs: { n: { type: 'number' } },
      const: { $ref: '#' },
    });
    expect(data({ $ref: '#' })).toBe(true);
    const meta = compile({ $ref: 'https://json-schema.org/draft/2020-12/schema' });
    expect(meta({ type: 'string' })).toBe(true);
  });
});

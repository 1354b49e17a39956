import { generateJsonSchema, SchemaSampleError } from './json-schema';

type Schema = Record<string, unknown>;

function schemaOf(records: unknown[]): Schema {
  return JSON.parse(generateJsonSchema('sample', JSON.stringify(records))) as Schema;
}

function propertiesOf(records: unknown[]): Record<string, Schema> {
  return schemaOf(records).properties as Record<string, Schema>;
}

function errorOf(sample: string): SchemaSampleError {
  try {
    generateJsonSchema('sample', sample);
  } catch (err) {
    if (err instanceof SchemaSampleError) return err;
    throw err;
  }
  throw new Error('expected a SchemaSampleError');
}

describe('generateJsonSchema', () => {
  it('describes a small nested record exactly', () => {
    const sample = JSON.stringify({
      id: 7,
      name: 'Ada',
      born: '1815-12-10',
      address: { city: 'London', zip: null },
      tags: ['math'],
    });
    expect(generateJsonSchema('people', sample)).toBe(
      [
        '{',
        '  "$schema": "https://json-schema.org/draft/2020-12/schema",',
        '  "$id": "people.json",',
        '  "title": "people",',
        '  "type": "object",',
        '  "properties": {',
        '    "id": {',
        '      "type": "integer"',
        '    },',
        '    "name": {',
        '      "type": "string"',
        '    },',
        '    "born": {',
        '      "type": "string",',
        '      "format": "date"',
        '    },',
        '    "address": {',
        '      "type": "object",',
        '      "properties": {',
        '        "city": {',
        '          "type": "string"',
        '        },',
        '        "zip": {',
        '          "type": "null"',
        '        }',
        '      },',
        '      "required": [',
        '        "city",',
        '        "zip"',
        '      ],',
        '      "additionalProperties": true',
        '    },',
        '    "tags": {',
        '      "type": "array",',
        '      "items": {',
        '        "type": "string"',
        '      }',
        '    }',
        '  },',
        '  "required": [',
        '    "id",',
        '    "name",',
        '    "born",',
        '    "address",',
        '    "tags"',
        '  ],',
        '  "additionalProperties": true',
        '}',
        '',
      ].join('\n'),
    );
  });

  it('requires only the keys present in every record, counting null values as present', () => {
    const schema = schemaOf([
      { a: 1, b: null, c: 'x' },
      { a: 2, b: 'y' },
    ]);
    expect(schema.required).toEqual(['a', 'b']);
    expect(Object.keys(schema.properties as Schema)).toEqual(['a', 'b', 'c']);
  });

  it('omits required when no key is in every record', () => {
    const schema = schemaOf([{ a: 1 }, { b: 2 }]);
    expect(schema).not.toHaveProperty('required');
    expect(schema.properties).toEqual({ a: { type: 'integer' }, b: { type: 'integer' } });
  });

  it('orders properties by first appearance across records, numeric keys included', () => {
    const output = generateJsonSchema('t', '[{"b":1,"a":1},{"10":1,"c":1},{"2":1,"a":2}]');
    const keys = [...output.matchAll(/^ {4}"([^"]+)": \{$/gm)].map((match) => match[1]);
    expect(keys).toEqual(['b', 'a', '10', 'c', '2']);
  });

  it('merges types: integer+number, sorted unions with null, several kinds', () => {
    const props = propertiesOf([
      { n: 1, u: null, m: 1, s: 'x', o: { k: 1 } },
      { n: 2.5, u: 'text', m: 'one', s: 'y', o: null },
      { n: 3, u: null, m: true, s: 'z', o: { k: 2 } },
    ]);
    expect(props.n).toEqual({ type: 'number' });
    expect(props.u).toEqual({ type: ['null', 'string'] });
    expect(props.m).toEqual({ type: ['boolean', 'integer', 'string'] });
    expect(props.s).toEqual({ type: 'string' });
    expect(props.o).toEqual({
      type: ['null', 'object'],
      properties: { k: { type: 'integer' } },
      required: ['k'],
      additionalProperties: true,
    });
  });

  it('keeps integer for whole numbers, however they are written', () => {
    const props = propertiesOf([{ a: 1 }, { a: -4 }, { a: 1e3 }]);
    expect(props.a).toEqual({ type: 'integer' });
    expect(generateJsonSchema('t', '{"a": 2.0}')).toContain('"type": "integer"');
  });

  it.each<[string, unknown[], string | undefined]>([
    ['dates', ['2024-01-05', '2024-02-29', '2000-02-29'], 'date'],
    ['an impossible day', ['2024-01-05', '2023-02-29'], undefined],
    ['a month 13', ['2024-13-01'], undefined],
    ['date-times with offsets', ['2024-01-05T10:00:00Z', '2024-01-05T23:59:59.125+01:30'], 'date-time'],
    ['a date-time without offset', ['2024-01-05T10:00:00'], undefined],
    ['a space instead of T', ['2024-01-05 10:00:00Z'], undefined],
    ['dates mixed with date-times', ['2024-01-05', '2024-01-05T10:00:00Z'], undefined],
    ['dates mixed with free text', ['2024-01-05', 'soon'], undefined],
    ['dates with nulls (only strings count)', ['2024-01-05', null], 'date'],
  ])('string format for %s', (_label, values, format) => {
    const prop = propertiesOf(values.map((v) => ({ v }))).v;
    if (format === undefined) expect(prop).not.toHaveProperty('format');
    else expect(prop.format).toBe(format);
  });

  it('merges the elements of all arrays of objects into one items schema', () => {
    const props = propertiesOf([
      {
        lines: [
          { sku: 'A', qty: 1 },
          { sku: 'B', qty: 2, note: 'gift' },
        ],
      },
      { lines: [{ sku: 'C', qty: 0.5 }] },
    ]);
    expect(props.lines).toEqual({
      type: 'array',
      items: {
        type: 'object',
        properties: { sku: { type: 'string' }, qty: { type: 'number' }, note: { type: 'string' } },
        required: ['sku', 'qty'],
        additionalProperties: true,
      },
    });
  });

  it('omits items when every array is empty, and ignores empty arrays otherwise', () => {
    expect(propertiesOf([{ a: [] }, { a: [] }]).a).toEqual({ type: 'array' });
    expect(propertiesOf([{ a: [] }, { a: [1, 'x'] }]).a).toEqual({
      type: 'array',
      items: { type: ['integer', 'string'] },
    });
  });

  it('describes nested arrays and always lists properties of an object, even an empty one', () => {
    const props = propertiesOf([{ grid: [[1, 2], [3.5]], meta: {} }]);
    expect(props.grid).toEqual({ type: 'array', items: { type: 'array', items: { type: 'number' } } });
    expect(props.meta).toEqual({ type: 'object', properties: {}, additionalProperties: true });
  });

  it('reads NDJSON, skipping blank lines and CRLF line ends, the same as the array form', () => {
    const records = [{ a: 1, b: 'x' }, { a: 2.5 }, { c: [true] }];
    const ndjson = `\n${records.map((r) => JSON.stringify(r)).join('\r\n\r\n')}\n`;
    expect(generateJsonSchema('t', ndjson)).toBe(generateJsonSchema('t', JSON.stringify(records)));
    expect(JSON.parse(generateJsonSchema('t', ndjson)).properties.a).toEqual({ type: 'number' });
  });

  it('reads a pretty-printed document spanning many lines', () => {
    const pretty = JSON.stringify([{ a: 1 }, { a: 2, b: 'x' }], null, 2);
    expect(generateJsonSchema('t', pretty)).toBe(generateJsonSchema('t', '[{"a":1},{"a":2,"b":"x"}]'));
  });

  it('is deterministic: the same input gives byte-identical output', () => {
    const sample = '{"z":1,"y":[{"b":null,"a":"2024-01-05"}],"x":{"w":true}}\n{"y":[],"v":1.5}';
    const first = generateJsonSchema('t', sample);
    expect(generateJsonSchema('t', sample)).toBe(first);
    expect(first.endsWith('}\n')).toBe(true);
  });

  it('keeps awkward keys as plain properties', () => {
    const props = propertiesOf([JSON.parse('{"__proto__": 1, "constructor": "x", "a b": null}')]);
    expect(Object.keys(props)).toEqual(['__proto__', 'constructor', 'a b']);
    expect(Object.getOwnPropertyDescriptor(props, '__proto__')?.value).toEqual({ type: 'integer' });
  });

  it('uses the name as title and a percent-encoded $id', () => {
    const schema = JSON.parse(generateJsonSchema('my orders/v2', '{"a":1}')) as Schema;
    expect(schema.title).toBe('my orders/v2');
    expect(schema.$id).toBe('my%20orders%2Fv2.json');
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(schema.additionalProperties).toBe(true);
  });

  it.each<[string, string, string]>([
    ['a bad literal', '{\n  "a": 1,\n  "b": tru\n}', 'the sample is not valid JSON (line 3, column 8: '],
    ['a trailing comma', '{\n  "a": 1,\n}', 'the sample is not valid JSON (line 3, column 1: '],
    ['an unfinished array', '[\n  {"a": 1},\n', 'the sample is not valid JSON (line 3, column 1: '],
    ['an unterminated string', '{"a": "x', 'the sample is not valid JSON (line 1, column '],
    [
      'a bad NDJSON line',
      '{"a":1}\n\n{"a":2}\n{"a": x}',
      'the NDJSON sample is not valid JSON (line 4, column 7: ',
    ],
  ])('reports %s with its line', (_label, sample, start) => {
    const err = errorOf(sample);
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('SchemaSampleError');
    expect(err.message.startsWith(start)).toBe(true);
    expect(err.message).not.toMatch(/\n/);
  });

  it.each<[string, string, string]>([
    ['an empty sample', ' \n\t\n', 'the sample is empty'],
    ['a scalar document', '42', 'the sample must be a JSON object, an array of objects or NDJSON'],
    ['an empty array', '[]', 'the sample array holds no records'],
    ['an array holding a non-object', '[{"a":1}, [1]]', 'item 2 of the sample array is not a JSON object'],
    [
      'an NDJSON line that is not an object',
      '{"a":1}\n"x"',
      'line 2 of the NDJSON sample is not a JSON object',
    ],
    [
      'nesting too deep',
      `{"a":${'['.repeat(150)}${']'.repeat(150)}}`,
      'the sample nests deeper than 100 levels',
    ],
  ])('refuses %s', (_label, sample, message) => {
    expect(errorOf(sample).message).toBe(message);
  });
});

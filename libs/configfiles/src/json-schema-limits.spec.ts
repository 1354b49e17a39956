import { ConfigFileErrorCode } from './config-file-errors';
import { MAX_SCHEMA_PATTERNS, jsonSchemaSuitsMainThread, schemaCost } from './json-schema-limits';
import { compile, refusal } from './spec-fixtures';

/** `n` different patterns, each applied to the value (they all match a run of 'a'). */
const patterns = (n: number) => Array.from({ length: n }, (_, i) => ({ pattern: `^(a|b)*a{0,${300 - i}}$` }));

describe('JSON Schema limits: patterns', () => {
  // Audit finding 4: each pattern took some 30 ms on an 8 KB value and their number was not bounded
  // (64 took 1.8 s a record).
  it('refuses more than 16 patterns with a 400 naming the limit', () => {
    expect(refusal({ properties: { a: { allOf: patterns(MAX_SCHEMA_PATTERNS) } } })).toBeUndefined();
    expect(refusal({ properties: { a: { allOf: patterns(64) } } })).toMatchObject({
      status: 400,
      domainCode: ConfigFileErrorCode.InvalidSchema,
      message:
        "'s.json' is not a valid JSON Schema: it applies 64 patterns (pattern and patternProperties; a $ref counts " +
        "its target's each time it is used), more than the 16 a schema may have (each runs on every value it applies to)",
    });
  });

  it('counts patternProperties, propertyNames and a $ref each time it is used, not unused definitions', () => {
    const props = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`^p${i}`, {}]));
    expect(schemaCost({ patternProperties: props }).patterns).toBe(17);
    expect(
      schemaCost({ propertyNames: { pattern: '^a' }, properties: { b: { pattern: 'b' } } }).patterns,
    ).toBe(2);
    const reused = {
      allOf: Array.from({ length: 17 }, () => ({ $ref: '#/$defs/p' })),
      $defs: { p: { pattern: 'x' } },
    };
    expect(schemaCost(reused).patterns).toBe(17);
    expect(refusal(reused)?.message).toContain('it applies 17 patterns');
    // Never applied: Ajv compiles it, no value runs it.
    expect(refusal({ type: 'string', $defs: { unused: { allOf: patterns(40) } } })).toBeUndefined();
    // A tree of any depth: the recursion applies its pattern once a level of the value.
    const tree = {
      $defs: {
        node: { properties: { name: { pattern: '^\\w+$' }, kids: { items: { $ref: '#/$defs/node' } } } },
      },
      $ref: '#/$defs/node',
    };
    expect(schemaCost(tree)).toMatchObject({ patterns: 1, recursive: true });
    expect(compile(tree)({ name: 'a', kids: [{ name: 'b', kids: [] }] })).toBe(true);
  });

  it('refuses more than 4,096 subschemas before Ajv compiles them', () => {
    const wide = {
      properties: Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`p${i}`, { type: 'string' }])),
    };
    const started = process.cpuUsage();
    expect(refusal(wide)).toMatchObject({
      status: 400,
      message: expect.stringContaining('it applies more than 4096 subschemas') as string,
    });
    // Ajv took 4 s to compile it (CPU time: the wall clock of a loaded machine counts others' too).
    const used = process.cpuUsage(started);
    expect((used.user + used.system) / 1000).toBeLessThan(1000);
    // A $ref used many times counts its target each time (8 × 8 × 8 × 8 × 8 = 32,768 applications).
    const level = (ref: string) => ({ allOf: Array.from({ length: 8 }, () => ({ $ref: ref })) });
    const fan = {
      $ref: '#/$defs/a',
      $defs: {
        a: level('#/$defs/b'),
        b: level('#/$defs/c'),
        c: level('#/$defs/d'),
        d: level('#/$defs/e'),
        e: level('#/$defs/f'),
        f: { type: 'string' },
      },
    };
    expect(refusal(fan)?.message).toContain('it applies more than 4096 subschemas');
  });
});

describe('JSON Schema limits: the worker main thread', () => {
  it('keeps small schemas without patterns or recursion', () => {
    const plain = {
      type: 'object',
      properties: { id: { type: 'integer' }, tags: { type: 'array', items: { enum: ['a', 'b'] } } },
      required: ['id'],
    };
    expect(jsonSchemaSuitsMainThread(JSON.stringify(plain))).toBe(true);
    expect(jsonSchemaSuitsMainThread(JSON.stringify({ properties: { a: { pattern: '^a' } } }))).toBe(false);
    expect(jsonSchemaSuitsMainThread(JSON.stringify({ patternProperties: { '^a': {} } }))).toBe(false);
    expect(jsonSchemaSuitsMainThread(JSON.stringify({ propertyNames: { pattern: '^a' } }))).toBe(false);
    const recursive = { $defs: { n: { items: { $ref: '#/$defs/n' } } }, $ref: '#/$defs/n' };
    expect(jsonSchemaSuitsMainThread(JSON.stringify(recursive))).toBe(false);
    const wide = { properties: Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`p${i}`, {}])) };
    expect(jsonSchemaSuitsMainThread(JSON.stringify(wide))).toBe(false);
    const bigEnum = { enum: Array.from({ length: 10_000 }, (_, i) => `value ${i}`) };
    expect(jsonSchemaSuitsMainThread(JSON.stringify(bigEnum))).toBe(false);
    expect(jsonSchemaSuitsMainThread('{"type": ')).toBe(false);
  });
});

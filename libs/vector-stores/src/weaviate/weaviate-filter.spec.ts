import fc from 'fast-check';
import { graphqlLiteral, weaviateCondition, weaviateWhere } from './weaviate-filter';

describe('the GraphQL filters of the Weaviate store', () => {
  it('writes equality, any-of and conjunction with the value field of each property type', () => {
    expect(
      weaviateWhere([
        weaviateCondition('m_colour', 'text', ['red', 'green']),
        weaviateCondition('m_year', 'number', 2025),
        weaviateCondition('m_public', 'boolean', false),
      ]),
    ).toBe(
      '{operator: And, operands: [' +
        '{path: ["m_colour"], operator: ContainsAny, valueText: ["red", "green"]}, ' +
        '{path: ["m_year"], operator: Equal, valueNumber: 2025}, ' +
        '{path: ["m_public"], operator: Equal, valueBoolean: false}]}',
    );
    expect(weaviateCondition('m_n', 'int', 3)).toBe('{path: ["m_n"], operator: Equal, valueInt: 3}');
  });

  it('keeps any string inside its quotes: an unescaped quote never appears (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        const lit = graphqlLiteral(s);
        const body = lit.slice(1, -1);
        // Removing escape pairs leaves no quote, backslash or line break: nothing ends the literal early.
        // eslint-disable-next-line no-control-regex -- control characters must not survive unescaped
        expect(body.replace(/\\(["\\/bfnrt]|u[0-9a-f]{4})/g, '')).not.toMatch(/["\\\u0000-\u001f]/);
        expect(lit.startsWith('"') && lit.endsWith('"')).toBe(true);
      }),
    );
    expect(graphqlLiteral('x"}) { secret } #')).toBe('"x\\"}) { secret } #"');
  });

  it('refuses numbers GraphQL cannot write', () => {
    expect(() => graphqlLiteral(Number.NaN)).toThrow(/finite number/);
    expect(() => graphqlLiteral(Number.POSITIVE_INFINITY)).toThrow(/finite number/);
  });
});

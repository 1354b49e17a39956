import { columnsOf, evaluate, parseExpression } from './expression';

const row = (values: Record<string, string | null>) => (c: string) => values[c] ?? null;

describe('derive expressions', () => {
  it('concatenates, calls functions and respects precedence', () => {
    const r = row({ country: 'de', city: 'Berlin', qty: '3', price: '2.5', empty: null });
    expect(evaluate(parseExpression("upper(country) || '-' || city"), r)).toBe('DE-Berlin');
    expect(evaluate(parseExpression('qty * price + 1'), r)).toBe('8.5');
    expect(evaluate(parseExpression('(qty + 1) * 2'), r)).toBe('8');
    expect(evaluate(parseExpression('-qty'), r)).toBe('-3');
    expect(evaluate(parseExpression("coalesce(empty, 'n/a')"), r)).toBe('n/a');
    expect(evaluate(parseExpression("'it''s'"), r)).toBe("it's");
    expect(evaluate(parseExpression('length(city)'), r)).toBe('6');
  });

  it('yields null for arithmetic on non-numbers and division by zero', () => {
    const r = row({ a: 'x', b: '0', c: '4' });
    expect(evaluate(parseExpression('a + 1'), r)).toBeNull();
    expect(evaluate(parseExpression('c / b'), r)).toBeNull();
    expect(evaluate(parseExpression('missing || missing'), r)).toBeNull();
  });

  it('lists the columns it reads', () => {
    expect([...columnsOf(parseExpression("upper(a) || b || 'c'"))].sort()).toEqual(['a', 'b']);
  });

  it('rejects invalid expressions naming the problem', () => {
    expect(() => parseExpression('upper(a')).toThrow(/expected ',' or '\)'|unexpected end/);
    expect(() => parseExpression('eval(a)')).toThrow(/unknown function eval/);
    expect(() => parseExpression("'open")).toThrow(/unterminated string literal/);
    expect(() => parseExpression('a $ b')).toThrow(/unexpected '\$'/);
    expect(() => parseExpression('a b')).toThrow(/unexpected 'b'/);
  });
});

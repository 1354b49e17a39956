import { MAX_RULES_PER_COLUMN, columnsOverRuleLimit } from './data-quality-limits';

describe('columnsOverRuleLimit', () => {
  it('names the columns with more rules than MAX_RULES_PER_COLUMN, with their counts', () => {
    const rules = (column: string, n: number) => Array.from({ length: n }, () => ({ column }));
    expect(MAX_RULES_PER_COLUMN).toBe(16);
    expect(columnsOverRuleLimit([...rules('a', 16), ...rules('b', 3)])).toEqual([]);
    expect(
      columnsOverRuleLimit([...rules('b', 2), ...rules('a', 17), ...rules('b', 15), ...rules('c', 16)]),
    ).toEqual([
      { column: 'b', rules: 17 },
      { column: 'a', rules: 17 },
    ]);
  });
});

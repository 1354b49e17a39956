import { rejectsTable } from './created-tables';

describe('rejectsTable', () => {
  it('is <table>_rejects while that stays under 63 bytes', () => {
    expect(rejectsTable('sales')).toBe('sales_rejects');
    expect(rejectsTable('t'.repeat(54))).toBe(`${'t'.repeat(54)}_rejects`);
  });

  it('never truncates into the table name: longer tables get 63 bytes with a hash of the whole name', () => {
    for (const length of [55, 56, 62, 63]) {
      const table = 'a'.repeat(length);
      const name = rejectsTable(table);
      expect(Buffer.byteLength(name)).toBe(63);
      expect(name).not.toBe(table);
      expect(name).toMatch(/^a{42}_[0-9a-f]{12}_rejects$/);
    }
  });

  it('gives tables sharing their first 42 characters different rejects tables', () => {
    const prefix = 'x'.repeat(50);
    expect(rejectsTable(`${prefix}_one`)).not.toBe(rejectsTable(`${prefix}_two`));
  });
});

import { ValidationError } from '@tapyard/model';
import { PG_MAX_IDENTIFIER_BYTES, quoteIdent } from './sql-ident';

describe('quoteIdent', () => {
  it('double-quotes a name and doubles its embedded quotes', () => {
    expect(quoteIdent('orders')).toBe('"orders"');
    expect(quoteIdent('Mixed Case-1')).toBe('"Mixed Case-1"');
    expect(quoteIdent('a"b')).toBe('"a""b"');
    expect(quoteIdent('"; DROP TABLE x; --')).toBe('"""; DROP TABLE x; --"');
  });

  it('refuses an empty name and a NUL', () => {
    expect(() => quoteIdent('')).toThrow(ValidationError);
    expect(() => quoteIdent('a\0b')).toThrow(/NUL/);
  });

  it('takes a name of 63 bytes and refuses one PostgreSQL would truncate, counting bytes, not characters', () => {
    const longest = 'x'.repeat(PG_MAX_IDENTIFIER_BYTES);
    expect(quoteIdent(longest)).toBe(`"${longest}"`);
    expect(() => quoteIdent(`${longest}y`)).toThrow(/longer than 63 bytes/);
    // 31 two-byte characters are 62 bytes; one more is 64.
    expect(quoteIdent('é'.repeat(31))).toBe(`"${'é'.repeat(31)}"`);
    expect(() => quoteIdent('é'.repeat(32))).toThrow(ValidationError);
  });

  it('measures the name before quoting: embedded quotes do not count twice', () => {
    const name = `${'"'.repeat(10)}${'x'.repeat(PG_MAX_IDENTIFIER_BYTES - 10)}`;
    expect(quoteIdent(name)).toBe(`"${'""'.repeat(10)}${'x'.repeat(PG_MAX_IDENTIFIER_BYTES - 10)}"`);
  });
});

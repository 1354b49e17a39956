import { Coerced, Invalid, coercer } from './coerce';

const reasonOf = (c: Coerced): string => (c instanceof Invalid ? c.reason : `ok: ${String(c)}`);

describe('coercer', () => {
  it('string: keeps text exactly, the empty string included (NULL is decided by the caller)', () => {
    const c = coercer('string');
    expect(c('')).toBe('');
    expect(c('  padded  ')).toBe('  padded  ');
    expect(c('NULL')).toBe('NULL');
    expect(c('\\N')).toBe('\\N');
    expect(c('a\tb\nc')).toBe('a\tb\nc');
    expect(reasonOf(c('a\0b'))).toBe("'a\\0b' contains a NUL character, which a string cannot hold");
  });

  it('non-string types: trim, and map empty and null tokens to NULL', () => {
    for (const type of ['boolean', 'int', 'bigint', 'float', 'double', 'date', 'timestamp'] as const) {
      const c = coercer(type);
      for (const token of ['', '  ', 'NULL', 'null', '\\N', 'NA', 'N/A', ' NULL ']) {
        expect(c(token)).toBeNull();
      }
    }
    expect(coercer('int')(' 42 ')).toBe(42);
    expect(coercer('date')('\t2024-01-31\r\n')).toBe('2024-01-31');
  });

  it('decimal: exact canonical text, never rounded; the limits named when exceeded', () => {
    const c = coercer('decimal');
    expect(c('12.50')).toBe('12.50');
    expect(c(' +0012.5 ')).toBe('12.5');
    expect(c('-.5')).toBe('-0.5');
    expect(c('5.')).toBe('5');
    expect(c('-0.00')).toBe('0.00');
    expect(c('123456789012345678901234567890.123456789')).toBe('123456789012345678901234567890.123456789');
    expect(c('NULL')).toBeNull();
    for (const bad of ['1e5', '1.2.3', '1,5', 'NaN', 'Infinity', '-', '.', '$12', '12 50'])
      expect(reasonOf(c(bad))).toBe(
        `'${bad}' is not a decimal (expected digits with an optional sign and at most one decimal point, no exponent)`,
      );
    const money = coercer('decimal', true, { precision: 6, scale: 2 });
    expect(money('12.5')).toBe('12.50');
    expect(money('-9999.99')).toBe('-9999.99');
    expect(money('0001234')).toBe('1234.00');
    expect(reasonOf(money('12.345'))).toBe(
      "'12.345' has 3 digits after the decimal point, more than the scale 2 allows (the column is decimal(6,2))",
    );
    expect(reasonOf(money('12345.6'))).toBe(
      "'12345.6' has 5 digits before the decimal point, more than the 4 allowed (the column is decimal(6,2))",
    );
    // A precision alone means scale 0, as numeric(p) does in PostgreSQL.
    expect(reasonOf(coercer('decimal', true, { precision: 3 })('1.5'))).toBe(
      "'1.5' has 1 digit after the decimal point, more than the scale 0 allows (the column is decimal(3,0))",
    );
    expect(coercer('decimal', true, { precision: 3 })('999')).toBe('999');
  });

  it('without null tokens (a pipeline with its own nullValues) such text is not a value', () => {
    expect(reasonOf(coercer('int', false)(''))).toBe("'' is not an int");
    expect(reasonOf(coercer('date', false)(' NA '))).toBe("'NA' is not a date");
    expect(coercer('int', false)('7')).toBe(7);
    expect(coercer('string', false)('NA')).toBe('NA');
  });

  it('boolean', () => {
    const c = coercer('boolean');
    for (const t of ['true', 'TRUE', 'True', 't', 'T', 'yes', 'YES', 'Yes', 'y', 'Y', '1', 'tRuE', 'yEs']) {
      expect(c(t)).toBe(true);
    }
    for (const f of ['false', 'FALSE', 'f', 'F', 'no', 'No', 'n', 'N', '0', 'fAlSe'])
      expect(c(f)).toBe(false);
    expect(reasonOf(c('maybe'))).toBe("'maybe' is not a boolean");
    expect(reasonOf(c('2'))).toBe("'2' is not a boolean");
    expect(reasonOf(c('truthy'))).toBe("'truthy' is not a boolean");
  });

  it('int: exact int32 range, digits only', () => {
    const c = coercer('int');
    expect(c('2147483647')).toBe(2147483647);
    expect(c('-2147483648')).toBe(-2147483648);
    expect(c('+7')).toBe(7);
    expect(c('0000000000002147483647')).toBe(2147483647);
    expect(c('-0')).toBe(-0);
    expect(reasonOf(c('2147483648'))).toBe("'2147483648' is out of range for an int");
    expect(reasonOf(c('-2147483649'))).toBe("'-2147483649' is out of range for an int");
    expect(reasonOf(c('99999999999'))).toBe("'99999999999' is out of range for an int");
    for (const bad of ['abc', '1.0', '1e3', '1_000', '0x1F', '-', '+', '1 2', '١٢']) {
      expect(reasonOf(c(bad))).toBe(`'${bad}' is not an int`);
    }
  });

  it('bigint: exact int64 range', () => {
    const c = coercer('bigint');
    expect(c('9223372036854775807')).toBe(9223372036854775807n);
    expect(c('-9223372036854775808')).toBe(-9223372036854775808n);
    expect(c('123456789012345')).toBe(123456789012345);
    // Safe integers are numbers whatever their spelling; beyond 2^53 only a BigInt is exact.
    expect(c('+0009007199254740991')).toBe(9007199254740991);
    expect(c('9007199254740993')).toBe(9007199254740993n);
    expect(reasonOf(c('9223372036854775808'))).toBe("'9223372036854775808' is out of range for a bigint");
    expect(reasonOf(c('-9223372036854775809'))).toBe("'-9223372036854775809' is out of range for a bigint");
    expect(reasonOf(c('12345678901234567890'))).toBe("'12345678901234567890' is out of range for a bigint");
    expect(reasonOf(c('1.5'))).toBe("'1.5' is not a bigint");
  });

  it('float and double: finite decimal numbers only', () => {
    const d = coercer('double');
    for (const v of [
      '1',
      '-1.5',
      '1e5',
      '-.5',
      '5.',
      '+3.25E-3',
      '0.0',
      '1e-310',
      '1.7976931348623157e308',
    ]) {
      expect(d(v)).toBe(Number(v));
    }
    for (const bad of [
      'NaN',
      'Infinity',
      '-Infinity',
      'inf',
      '1,5',
      '.',
      'e5',
      '1e',
      '1e+',
      '0x10',
      '1.2.3',
      '--1',
    ]) {
      expect(reasonOf(d(bad))).toBe(`'${bad}' is not a double`);
    }
    expect(reasonOf(d('1e400'))).toBe("'1e400' is out of range for a double");
    expect(reasonOf(d('1e-400'))).toBe("'1e-400' is out of range for a double");
    expect(d('0e-400')).toBe(0);
    const f = coercer('float');
    // float is single precision: the value is the one PostgreSQL's real stores.
    expect(f('3.4e38')).toBe(Math.fround(3.4e38));
    expect(f('1e-40')).toBe(Math.fround(1e-40));
    expect(f('0.1')).toBe(Math.fround(0.1));
    expect(reasonOf(f('3.5e38'))).toBe("'3.5e38' is out of range for a float");
    expect(reasonOf(f('1e-50'))).toBe("'1e-50' is out of range for a float");
    expect(reasonOf(f('1,5'))).toBe("'1,5' is not a float");
  });

  it('date: YYYY-MM-DD, a real calendar date', () => {
    const c = coercer('date');
    expect(c('2024-02-29')).toBe('2024-02-29');
    expect(c('2000-02-29')).toBe('2000-02-29');
    expect(c('0001-01-01')).toBe('0001-01-01');
    expect(c('9999-12-31')).toBe('9999-12-31');
    for (const bad of [
      '2023-02-29',
      '1900-02-29',
      '2023-02-30',
      '2024-04-31',
      '2024-13-01',
      '2024-00-10',
      '2024-01-00',
      '0000-01-01',
    ]) {
      expect(reasonOf(c(bad))).toBe(`'${bad}' is not a valid date`);
    }
    for (const bad of ['2024-1-01', '24-01-01', '2024/01/01', '01.02.2024', '2024-01-01T00:00:00', 'today']) {
      expect(reasonOf(c(bad))).toBe(`'${bad}' is not a date (expected YYYY-MM-DD)`);
    }
  });

  it('timestamp: ISO 8601 date-time with optional fraction and zone', () => {
    const c = coercer('timestamp');
    // Normalised: `T`, and an explicit zone (UTC when none), in a form JavaScript's Date reads too.
    for (const [v, normal] of [
      ['2024-02-29T12:34:56', '2024-02-29T12:34:56Z'],
      ['2024-02-29 12:34', '2024-02-29T12:34Z'],
      ['2024-02-29t00:00:00z', '2024-02-29T00:00:00Z'],
      ['2024-02-29T12:34:56.123456Z', '2024-02-29T12:34:56.123456Z'],
      ['2024-02-29T12:34:56.5+02:00', '2024-02-29T12:34:56.5+02:00'],
      ['2024-02-29T12:34:56-0530', '2024-02-29T12:34:56-05:30'],
      ['2024-02-29T12:34:56+14', '2024-02-29T12:34:56+14:00'],
      ['2024-02-29T24:00:00', '2024-02-29T24:00:00Z'],
      ['2016-12-31T23:59:60Z', '2016-12-31T23:59:60Z'],
      ['2024-02-29', '2024-02-29T00:00Z'],
    ]) {
      expect(c(v)).toBe(normal);
    }
    for (const v of [
      '2024-02-29 12:34',
      '2024-02-29T12:34:56-0530',
      '2024-02-29T12:34:56+14',
      '2024-02-29',
    ]) {
      expect(Number.isNaN(new Date(c(v) as string).getTime())).toBe(false);
    }
    for (const bad of [
      '2023-02-29T10:00:00',
      '2024-01-01T25:00:00',
      '2024-01-01T12:60',
      '2024-01-01T24:00:01',
      '2024-01-01T10:00+16:00',
    ]) {
      expect(reasonOf(c(bad))).toBe(`'${bad}' is not a valid timestamp`);
    }
    for (const bad of [
      '2024-01-01T10',
      '2024-01-01X10:00',
      '2024-01-01T10:00:00.',
      '2024-01-01T10:00:00 +02:00',
      'now',
    ]) {
      expect(reasonOf(c(bad))).toMatch(
        new RegExp(`^'${bad.replace(/[.+]/g, '\\$&')}' is not a timestamp \\(expected ISO 8601`),
      );
    }
  });

  it('cuts long values in reasons to 100 characters', () => {
    const long = 'x'.repeat(500);
    expect(reasonOf(coercer('int')(long))).toBe(`'${'x'.repeat(100)}…' is not an int`);
  });
});

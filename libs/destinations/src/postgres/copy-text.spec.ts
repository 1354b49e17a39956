import { coercer, Value, FieldType } from '@tapyard/model';
import { createEncoder, escapeCopyText } from './copy-text';

describe('escapeCopyText', () => {
  it('escapes backslash, tab, newlines and the other COPY control escapes', () => {
    expect(escapeCopyText('plain text, "quotes"; ünïcode')).toBe('plain text, "quotes"; ünïcode');
    expect(escapeCopyText('a\\b\tc\nd\re\bf\fg\vh')).toBe('a\\\\b\\tc\\nd\\re\\bf\\fg\\vh');
    expect(escapeCopyText('\\N')).toBe('\\\\N');
    expect(escapeCopyText('\x01\x1f')).toBe('\x01\x1f');
    expect(escapeCopyText('')).toBe('');
  });

  it('returns the same string when nothing needs escaping', () => {
    const s = 'x'.repeat(100);
    expect(escapeCopyText(s)).toBe(s);
  });
});

describe('the COPY-text encoder', () => {
  const columns: { name: string; type: FieldType }[] = [
    { name: 'b', type: 'boolean' },
    { name: 'i', type: 'int' },
    { name: 'g', type: 'bigint' },
    { name: 'f', type: 'float' },
    { name: 'd', type: 'double' },
    { name: 's', type: 'string' },
    { name: 'day', type: 'date' },
    { name: 'ts', type: 'timestamp' },
  ];
  const typed = (raw: (string | null)[]): Value[] =>
    raw.map((r, c) => (r === null ? null : (coercer(columns[c].type)(r) as Value)));

  it('writes one line per row, columns in order, \\N for NULL, values as PostgreSQL reads them', () => {
    const rows = [
      typed([
        'yes',
        '+7',
        '9223372036854775807',
        '0.1',
        '-1e-5',
        'a\tb\\c',
        '2024-02-29',
        '2024-02-29 10:00',
      ]),
      typed(['0', '-0', '-0', '-0.0', '-0e5', '', '2024-02-29', '2024-02-29 10:00']),
      typed([null, null, null, null, null, '', null, null]),
    ];
    const text = createEncoder(columns)({
      columns,
      values: columns.map((_, c) => rows.map((r) => r[c])),
      lines: [2, 3, 4],
    });
    expect(text).toBe(
      `t\t7\t9223372036854775807\t${String(Math.fround(0.1))}\t-0.00001\ta\\tb\\\\c\t2024-02-29\t2024-02-29T10:00Z\n` +
        // Negative zero keeps its sign in float and double, as PostgreSQL stores it.
        'f\t0\t0\t-0\t-0\t\t2024-02-29\t2024-02-29T10:00Z\n' +
        '\\N\t\\N\t\\N\t\\N\t\\N\t\t\\N\t\\N\n',
    );
  });
});

import { ValidationError } from '@tapyard/core';
import {
  decimalBytes,
  decimalFromBytes,
  decimalWidth,
  fixedDecimal,
  warehouseDecimal,
} from './parquet-decimal';

describe('Parquet DECIMAL values', () => {
  it('stores the unscaled integer as big-endian two’s complement in the column’s width, read back exactly', () => {
    const d = { precision: 4, scale: 2 };
    const cases: [string, string, string][] = [
      ['0.00', '0000', '0.00'],
      ['12.50', '04e2', '12.50'],
      ['12.5', '04e2', '12.50'],
      ['-0.01', 'ffff', '-0.01'],
      ['1.27', '007f', '1.27'],
      ['-1.28', 'ff80', '-1.28'],
      ['-1.29', 'ff7f', '-1.29'],
      ['99.99', '270f', '99.99'],
      ['-99.99', 'd8f1', '-99.99'],
    ];
    for (const [text, hex, back] of cases) {
      const bytes = decimalBytes(text, d) as Buffer;
      expect(bytes.toString('hex')).toBe(hex);
      expect(decimalFromBytes(bytes, 2)).toBe(back);
    }
    const widest = decimalBytes(`-${'9'.repeat(36)}.99`, { precision: 38, scale: 2 }) as Buffer;
    expect(widest).toHaveLength(16);
    expect(decimalFromBytes(widest, 2)).toBe(`-${'9'.repeat(36)}.99`);
  });

  it('sizes a column as Parquet readers expect: 4 bytes to 9 digits, 8 to 18, 16 to 38', () => {
    const widths = [1, 2, 9, 10, 18, 19, 38, 39].map((precision) => decimalWidth({ precision, scale: 0 }));
    expect(widths).toEqual([1, 1, 4, 5, 8, 9, 16, 17]);
  });

  it('refuses what the column cannot hold exactly, never rounds', () => {
    expect(decimalBytes('1.234', { precision: 10, scale: 2 })).toBe(
      '1.234 has more digits after the point than the scale 2 of decimal(10,2)',
    );
    expect(decimalBytes('123456789.1', { precision: 10, scale: 2 })).toBe(
      '123456789.1 has more digits than decimal(10,2) holds',
    );
    expect(decimalBytes('0.5', { precision: 1, scale: 1 })).toBeInstanceOf(Buffer);
  });

  it('fixes undeclared limits at decimal(38,9) and keeps warehouses within 38 digits', () => {
    expect(fixedDecimal({})).toEqual({ precision: 38, scale: 9 });
    expect(fixedDecimal({ precision: 5 })).toEqual({ precision: 5, scale: 0 });
    expect(
      warehouseDecimal({ name: 'p', type: 'decimal', precision: 12, scale: 2 }, 'Snowflake', 'NUMBER'),
    ).toBe('NUMBER(12,2)');
    expect(warehouseDecimal({ name: 'p', type: 'decimal' }, 'Databricks', 'DECIMAL')).toBe('DECIMAL(38,9)');
    expect(() =>
      warehouseDecimal({ name: 'p', type: 'decimal', precision: 40 }, 'Snowflake', 'NUMBER'),
    ).toThrow(ValidationError);
  });
});

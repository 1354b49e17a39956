import { ValidationError } from '@tapyard/core';
import { decimalBytes, decimalFromBytes, fixedDecimal, warehouseDecimal } from './parquet-decimal';

describe('Parquet DECIMAL values', () => {
  it('stores the unscaled integer as big-endian two’s complement and reads it back exactly', () => {
    const d = { precision: 38, scale: 2 };
    const cases: [string, string, string][] = [
      ['0.00', '00', '0.00'],
      ['12.50', '04e2', '12.50'],
      ['12.5', '04e2', '12.50'],
      ['-0.01', 'ff', '-0.01'],
      ['1.27', '7f', '1.27'],
      ['1.28', '0080', '1.28'],
      ['-1.28', '80', '-1.28'],
      ['-1.29', 'ff7f', '-1.29'],
      [`${'9'.repeat(36)}.99`, '', `${'9'.repeat(36)}.99`],
    ];
    for (const [text, hex, back] of cases) {
      const bytes = decimalBytes(text, d) as Buffer;
      expect(Buffer.isBuffer(bytes)).toBe(true);
      if (hex) expect(bytes.toString('hex')).toBe(hex);
      expect(decimalFromBytes(bytes, 2)).toBe(back);
    }
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

import { ValidationError } from '@tapyard/core';
import { compileJsonSchema } from './config-files.service';

describe('validation schema patterns', () => {
  it('run in linear time (a catastrophic pattern on a long value answers at once)', () => {
    const check = compileJsonSchema(
      JSON.stringify({ type: 'object', properties: { v: { type: 'string', pattern: '^(a+)+$' } } }),
      's.json',
    );
    const started = Date.now();
    expect(check({ v: `${'a'.repeat(5000)}!` })).toBe(false);
    expect(check({ v: 'aaa' })).toBe(true);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('refuse a pattern RE2 cannot run when the schema is compiled', () => {
    expect(() => compileJsonSchema(JSON.stringify({ type: 'string', pattern: '(a)\\1' }), 's.json')).toThrow(
      ValidationError,
    );
  });
});

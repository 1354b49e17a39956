import { ValidationError } from '@tapyard/core';
import { compileJsonSchema } from './config-files.service';

describe('validation schema patterns', () => {
  it('run in linear time (a catastrophic pattern on a long value answers at once)', () => {
    const check = compileJsonSchema(
      JSON.stringify({ type: 'object', properties: { v: { type: 'string', pattern: '^(a+)+$' } } }),
      's.json',
    );
    const started = process.cpuUsage();
    expect(check({ v: `${'a'.repeat(5000)}!` })).toBe(false);
    expect(check({ v: 'aaa' })).toBe(true);
    // CPU time: on a loaded machine the wall clock also counts what others ran.
    const used = process.cpuUsage(started);
    expect((used.user + used.system) / 1000).toBeLessThan(1000);
  });

  it('refuse a pattern RE2 cannot run when the schema is compiled', () => {
    expect(() => compileJsonSchema(JSON.stringify({ type: 'string', pattern: '(a)\\1' }), 's.json')).toThrow(
      ValidationError,
    );
  });
});

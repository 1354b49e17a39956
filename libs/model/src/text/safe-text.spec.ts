import { safeText } from './safe-text';

describe('safeText', () => {
  it('escapes control characters PostgreSQL or a terminal cannot take, keeps tab and line breaks', () => {
    expect(safeText('foo\u0000bar')).toBe('foo\\u0000bar');
    expect(safeText('a\u0001b\u001fc\u007fd')).toBe('a\\u0001b\\u001fc\\u007fd');
    expect(safeText('tab\tline\nreturn\r')).toBe('tab\tline\nreturn\r');
    expect(safeText('plain é 😀')).toBe('plain é 😀');
  });

  it('replaces lone surrogates', () => {
    expect(safeText('x\ud800y')).toBe('x\ufffdy');
  });
});

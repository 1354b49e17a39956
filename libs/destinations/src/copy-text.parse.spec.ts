import { escapeCopyText, parseCopyLine } from './copy-text';

describe('parseCopyLine', () => {
  it('is the inverse of escapeCopyText, with \\N as null', () => {
    const values = ['plain', 'tab\there', 'line\nfeed', 'back\\slash', '\r\b\f\v', '', '\\N as text'];
    const line = values.map(escapeCopyText).join('\t');
    expect(parseCopyLine(line)).toEqual(values);
    expect(parseCopyLine('a\t\\N\tb')).toEqual(['a', null, 'b']);
  });
});

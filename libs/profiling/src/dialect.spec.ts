import { sniffDelimiter } from './dialect';

describe('sniffDelimiter', () => {
  it('tells comma, semicolon, tab and pipe files apart by their regularity', () => {
    expect(sniffDelimiter('id,name,amount\n1,Ann,12.5\n2,Bob,7\n')).toBe(',');
    expect(sniffDelimiter('id\tname\tamount\n1\tAnn\t12.5\n2\tBob\t7\n')).toBe('\t');
    expect(sniffDelimiter('id|name\n1|Ann\n2|Bob\n')).toBe('|');
  });

  it('reads a European export: semicolons between fields, commas inside decimals', () => {
    const csv = 'Datum;Artikel;Menge;Preis\n02.01.2026;Stift;3;12,50\n03.01.2026;Tinte;1;7,00\n';
    expect(sniffDelimiter(csv)).toBe(';');
  });

  it('is not fooled by delimiters inside quotes or a few stray characters', () => {
    expect(sniffDelimiter('a,b\n"x;y;z",1\n"p;q;r",2\n')).toBe(',');
    expect(sniffDelimiter('name,note\nAnn,"line one\nline two; with a semicolon"\nBob,ok\n')).toBe(',');
    expect(sniffDelimiter('title\nOne; two\nThree\nFour\nFive\nSix\n')).toBe(',');
  });

  it('falls back to the comma for one column, an empty head or a cut-off single line', () => {
    expect(sniffDelimiter('only\n1\n2\n')).toBe(',');
    expect(sniffDelimiter('')).toBe(',');
    expect(sniffDelimiter('a;b;c')).toBe(';');
  });
});

import { detectHeader } from './header';

const table = (text: string): string[][] =>
  text
    .trim()
    .split('\n')
    .map((line) => line.split(','));

describe('detectHeader', () => {
  it('finds the header of a numeric table', () => {
    expect(detectHeader(table('id,amount,paid_on\n1,12.50,2024-01-05\n2,8.00,2024-01-06'))).toBe(true);
  });

  it('sees no header when the first row is data in a numeric table', () => {
    expect(detectHeader(table('1,12.50,2024-01-05\n2,8.00,2024-01-06'))).toBe(false);
  });

  it('rejects a first row with leading-zero codes, regional dates or amounts', () => {
    expect(detectHeader(table('00501,x\n10001,y'))).toBe(false);
    expect(detectHeader(table('01/02/2024,x\n02/02/2024,y'))).toBe(false);
  });

  it('finds the header of an all-text table', () => {
    expect(detectHeader(table('name,city\nAlice,Paris\nBob,Paris\nCarol,Lyon'))).toBe(true);
  });

  it('sees data when a first-row value reappears in its column', () => {
    expect(detectHeader(table('Alice,Paris\nBob,Paris\nCarol,Lyon'))).toBe(false);
  });

  it('uses fixed-length text columns as evidence', () => {
    expect(detectHeader(table('FR,France\nDE,Germany\nIT,Italy'))).toBe(false);
    expect(detectHeader(table('code,country\nFR,France\nDE,Germany\nIT,Italy'))).toBe(true);
  });

  it('reads a header above a boolean column, but not a boolean word', () => {
    expect(detectHeader(table('name,active\nAda,yes\nBob,no'))).toBe(true);
    expect(detectHeader(table('Ada,yes\nBob,no\nCy,yes'))).toBe(false);
  });

  it('requires non-empty first-row cells, and distinct ones unless the columns below are typed', () => {
    expect(detectHeader(table('name,name\nfoo,bar\nbaz,qux'))).toBe(false);
    expect(detectHeader(table('name,name\n1,2'))).toBe(true);
    expect(detectHeader(table('name,\n1,2'))).toBe(false);
    expect(detectHeader(table('name,NULL\n1,2'))).toBe(false);
  });

  it('handles a single row and no rows', () => {
    expect(detectHeader([['id', 'name']])).toBe(true);
    expect(detectHeader([['1', 'Ada']])).toBe(false);
    expect(detectHeader([])).toBe(false);
  });

  it('tolerates ragged rows', () => {
    expect(detectHeader([['id', 'score'], ['1'], ['2', '3.5', 'extra']])).toBe(true);
  });
});

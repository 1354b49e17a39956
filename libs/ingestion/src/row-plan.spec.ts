import { Readable } from 'node:stream';
import type { CsvAttributes } from '@tapyard/model';
import { readCsv } from '@tapyard/readers';
import { csvLine } from './row-plan';

async function cells(text: string, attrs: CsvAttributes): Promise<(string | null)[]> {
  for await (const batch of readCsv(Readable.from([Buffer.from(text)]), { ...attrs, header: false })) {
    return batch.rows[0];
  }
  throw new Error('no row');
}

const RFC: CsvAttributes = { delimiter: ',', header: true, quote: '"', escape: '"', encoding: 'utf-8' };

describe('csvLine (the raw text of a rejected row)', () => {
  it('quotes only what needs quoting, as files are usually written', () => {
    const line = csvLine(RFC);
    expect(line(['1', 'Smith, John', 'say "hi"', '', null, 'two\nlines', ' padded '])).toBe(
      '1,"Smith, John","say ""hi""","",,"two\nlines", padded ',
    );
  });

  it.each<[string, CsvAttributes, (string | null)[]]>([
    ['RFC 4180', RFC, ['a', 'b,c', '"', '', null, 'x\r\ny']],
    [
      'semicolons and a backslash escape',
      { ...RFC, delimiter: ';', escape: '\\' },
      ['a;b', 'say "hi"', 'back\\slash', '', null],
    ],
    ['tabs', { ...RFC, delimiter: '\t' }, ['a\tb', 'c', null]],
    ['null markers of its own', { ...RFC, nullValues: ['NA', ''] }, ['NA', null, 'x']],
  ])('reads back to the same cells: %s', async (_, attrs, row) => {
    expect(await cells(csvLine(attrs)(row), attrs)).toEqual(row);
  });
});

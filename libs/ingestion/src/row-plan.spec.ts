import { Readable } from 'node:stream';
import type { CsvAttributes, DataQualityRule, PipelineDefinition } from '@tapyard/model';
import { readCsv } from '@tapyard/readers';
import { RowPlan, csvLine } from './row-plan';

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

describe('RowPlan', () => {
  const withRules = (rules: DataQualityRule[]): PipelineDefinition =>
    ({
      name: 'p',
      catalog: null,
      source: {
        fileAttributes: { format: 'csv', csvAttributes: RFC, unstructuredAttributes: null },
        schemaProperties: { fields: [{ name: 'a', type: 'string' }] },
      },
      dataQuality: { rules, aiInstruction: null },
      transformation: { mappings: [], aiInstruction: null },
      destination: {},
    }) as PipelineDefinition;
  const regexes = (n: number): DataQualityRule[] =>
    Array.from({ length: n }, (_, k) => ({ type: 'regex', column: 'a', pattern: `^[a-z]{0,${k + 1}}$` }));

  it('refuses a column with more rules than a column may have (every rule runs on each value), naming it', () => {
    expect(() => new RowPlan(withRules(regexes(16)), ['a'])).not.toThrow();
    expect(() => new RowPlan(withRules(regexes(17)), ['a'])).toThrow(
      "column 'a' has 17 data-quality rules, more than the 16 a column may have: edit the pipeline",
    );
  });
});

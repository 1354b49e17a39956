import {
  AT_MARK,
  CsvGrammar,
  CLOSED_FIELD,
  END_FIELD,
  END_RECORD,
  EOF_RECORD,
  EOF_UNTERMINATED,
  ESC_SEEN,
  FIELD_START,
  LINE,
  MARK,
  NEXT_FIELD,
  QUOTED,
  QUOTE_MARK,
  QUOTE_SEEN,
  REC_START,
  SPLIT,
  STATE_MASK,
  TAKE,
  UNQUOTED,
  atEnd,
  newLine,
} from './csv-grammar';
import { csvChars } from './csv-chars';
import { readCsv } from './csv-reader';
import { csvRows } from './fastpath/csv-rows';
import { FatalReadError } from './record-batch';

const code = (s: string): number => s.charCodeAt(0);

async function* bytes(text: string): AsyncGenerator<Buffer> {
  yield Buffer.from(text);
}

/** Runs the table over `text` from REC_START: the states after each byte. */
function walk(g: CsvGrammar, text: string): number[] {
  const states: number[] = [];
  let state = REC_START;
  for (let i = 0; i < text.length;) {
    const t = g.step[(state << 8) | text.charCodeAt(i)];
    state = t & STATE_MASK;
    if ((t & TAKE) !== 0) {
      i++;
      states.push(state);
    }
  }
  return states;
}

describe('CSV grammar', () => {
  const g = new CsvGrammar({ delimiter: ',', quote: '"', escape: '\\' });

  it('opens a quoted field only at a field start', () => {
    expect(g.step[(FIELD_START << 8) | code('"')]).toBe(QUOTED | TAKE);
    expect(g.step[(UNQUOTED << 8) | code('"')]).toBe(UNQUOTED | TAKE);
    expect(walk(g, 'a"b,"c"')).toEqual([
      UNQUOTED,
      UNQUOTED,
      UNQUOTED,
      FIELD_START,
      QUOTED,
      QUOTED,
      QUOTE_SEEN,
    ]);
  });

  it('joins text after a closing quote, keeps a doubled quote, ends fields and records', () => {
    expect(g.step[(QUOTE_SEEN << 8) | code('x')]).toBe(UNQUOTED | SPLIT);
    expect(g.step[(QUOTE_SEEN << 8) | code('"')]).toBe(QUOTED | TAKE | SPLIT);
    expect(g.step[(QUOTE_SEEN << 8) | code(',')]).toBe(CLOSED_FIELD);
    expect(g.step[(QUOTE_SEEN << 8) | 10]).toBe(REC_START | END_FIELD | AT_MARK | END_RECORD);
    expect(g.step[(UNQUOTED << 8) | code(',')]).toBe(NEXT_FIELD);
    expect(g.step[(UNQUOTED << 8) | 13]).toBe(REC_START | END_FIELD | END_RECORD);
    expect(g.step[(QUOTED << 8) | code('"')]).toBe(QUOTE_MARK);
  });

  it('lets an escape escape only the quote or itself', () => {
    expect(g.step[(QUOTED << 8) | code('\\')]).toBe(ESC_SEEN | TAKE | MARK);
    expect(g.step[(ESC_SEEN << 8) | code('"')]).toBe(QUOTED | TAKE | SPLIT);
    expect(g.step[(ESC_SEEN << 8) | code('\\')]).toBe(QUOTED | TAKE | SPLIT);
    expect(g.step[(ESC_SEEN << 8) | code('n')]).toBe(QUOTED);
    // Outside quotes the escape is text.
    expect(g.step[(UNQUOTED << 8) | code('\\')]).toBe(UNQUOTED | TAKE);
  });

  it('counts \\n, \\r\\n and a lone \\r as one line each, inside quotes too', () => {
    expect(g.step[(REC_START << 8) | 10]).toBe(REC_START | TAKE | LINE);
    expect(g.step[(QUOTED << 8) | 13]).toBe(QUOTED | TAKE | LINE);
    expect(newLine(13, false)).toBe(true);
    expect(newLine(10, true)).toBe(false);
    expect(newLine(10, false)).toBe(true);
  });

  it('treats spaces and tabs other than the delimiter as blank', () => {
    expect([g.blank[32], g.blank[9], g.blank[code('a')]]).toEqual([1, 1, 0]);
    const tsv = new CsvGrammar({ delimiter: '\t', quote: '"', escape: null });
    expect([tsv.blank[32], tsv.blank[9]]).toEqual([1, 0]);
  });

  it('says what the end of the input means in each state', () => {
    expect([REC_START, FIELD_START, UNQUOTED, QUOTED, QUOTE_SEEN, ESC_SEEN].map(atEnd)).toEqual([
      0,
      EOF_RECORD,
      EOF_RECORD,
      EOF_UNTERMINATED,
      EOF_RECORD,
      EOF_UNTERMINATED,
    ]);
  });

  it('gives the scan loops exactly the bytes that change something', () => {
    const stops = g.stops(QUOTED);
    const stopBytes = [...stops.keys()].filter((c) => stops[c] === 1);
    expect(stopBytes).toEqual([10, 13, code('"'), code('\\')]);
  });

  it('checks the special characters once, for the reader and the cutter alike', async () => {
    expect(csvChars({ delimiter: ';', quote: "'", escape: "'" })).toEqual({
      delim: code(';'),
      quote: code("'"),
      esc: -1,
    });
    const bad = { delimiter: '"', quote: '"', escape: null, encoding: 'utf-8', header: false } as const;
    expect(() => csvChars(bad)).toThrow(
      'the CSV delimiter must differ from the quote and the escape character',
    );
    const read = async () => {
      for await (const batch of readCsv(bytes('a\n'), bad)) void batch;
    };
    const cut = async () => {
      for await (const part of csvRows(bytes('a\n'), bad)) void part;
    };
    const [r, c] = await Promise.all([read().catch((e: unknown) => e), cut().catch((e: unknown) => e)]);
    expect(r).toBeInstanceOf(FatalReadError);
    expect(c).toBeInstanceOf(FatalReadError);
    expect((r as Error).message).toBe((c as Error).message);
  });
});

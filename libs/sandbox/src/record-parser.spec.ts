import { RecordParser, RecordStreamError } from './record-parser';

const feed = (parser: RecordParser, ...chunks: string[]): unknown[] =>
  chunks.flatMap((c) => parser.push(Buffer.from(c)));

describe('RecordParser', () => {
  it('parses lines split anywhere across chunks', () => {
    const parser = new RecordParser(1024);
    const records = feed(parser, '{"a":1}\n[1,', '2]\n"x"\n3', '\nnull\n');
    expect(records).toEqual([{ a: 1 }, [1, 2], 'x', 3, null]);
    expect(parser.count).toBe(5);
    expect(parser.control).toBeNull();
  });

  it('keeps the text of the records of each push, without the control line', () => {
    const parser = new RecordParser(1024);
    expect(parser.push(Buffer.from('{"a":1}\n{"b'))).toEqual([{ a: 1 }]);
    expect(parser.lastText).toBe('{"a":1}');
    expect(parser.push(Buffer.from('":2}\n[3]\n!{"type":"done","records":3}\n'))).toEqual([{ b: 2 }, [3]]);
    expect(parser.lastText).toBe('{"b":2}\n[3]');
    expect(parser.push(Buffer.from('4\n'))).toEqual([]);
    expect(parser.lastText).toBe('');
  });

  it('stops at the control line and ignores anything after it', () => {
    const parser = new RecordParser(1024);
    const records = feed(parser, '1\n2\n!{"type":"done","records":2}\n3\n', '4\n');
    expect(records).toEqual([1, 2]);
    expect(parser.control).toEqual({ type: 'done', records: 2 });
  });

  it('reads an error control line that arrives alone and split', () => {
    const parser = new RecordParser(1024);
    feed(parser, '!{"type":"error","kind":"not_json",', '"message":"record 0 is not JSON"}\n');
    expect(parser.control).toMatchObject({ type: 'error', kind: 'not_json' });
  });

  it('refuses a record larger than the limit without buffering it all', () => {
    const parser = new RecordParser(1024);
    expect(() => feed(parser, `"${'x'.repeat(600)}`, 'y'.repeat(600))).toThrow(RecordStreamError);
  });

  it('refuses an oversized line inside one big chunk', () => {
    const parser = new RecordParser(1024);
    expect(() => feed(parser, `1\n"${'x'.repeat(2000)}"\n2\n`)).toThrow(/larger than the limit/);
  });

  it('reports a line that is not JSON as malformed', () => {
    const parser = new RecordParser(1024);
    expect(() => feed(parser, '{"a":1}\nnot json\n')).toThrow(/not JSON/);
  });
});

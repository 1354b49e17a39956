import { chunked } from '../../../test/support/byte-streams';
import { FatalReadError, RecordBatch, RowError } from './record-batch';
import {
  MAX_XML_ATTRIBUTES,
  MAX_XML_DEPTH,
  MAX_XML_RECORD_DEPTH,
  readXml,
  XML_DOCTYPE_ERROR,
  XmlReadOptions,
} from './xml-reader';

interface Read {
  rows: unknown[];
  lines: number[];
  errors: RowError[];
  fatal?: FatalReadError;
}

async function readWith(data: string | Buffer, opts: Partial<XmlReadOptions>, size: number): Promise<Read> {
  const batches: RecordBatch[] = [];
  let fatal: FatalReadError | undefined;
  try {
    for await (const b of readXml(chunked(data, size), { rowElement: 'row', minChunkBytes: 1, ...opts })) {
      batches.push(b);
    }
  } catch (err) {
    expect(err).toBeInstanceOf(FatalReadError);
    fatal = err as FatalReadError;
  }
  return {
    rows: batches.flatMap((b) => b.rows.map((r) => JSON.parse(r[0] ?? '') as unknown)),
    lines: batches.flatMap((b) => b.lines),
    errors: batches.flatMap((b) => b.errors),
    ...(fatal ? { fatal } : {}),
  };
}

/** Reads with 1-byte and whole-input chunks and checks that both agree. */
async function read(data: string | Buffer, opts: Partial<XmlReadOptions> = {}): Promise<Read> {
  const whole = await readWith(data, opts, 1 << 30);
  const bytewise = await readWith(data, opts, 1);
  expect({ ...bytewise, fatal: bytewise.fatal?.message }).toEqual({ ...whole, fatal: whole.fatal?.message });
  return whole;
}

describe('readXml', () => {
  it('turns each row element (at any depth) into a JSON object', async () => {
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
<export>
  <!-- a comment -->
  <rows>
    <row id="1" kind="a&amp;b">
      <name>Ann &lt;Zoë&gt; &#x1F600;</name>
      <tag>x</tag><tag>y</tag>
      <price currency="EUR">9.50</price>
      <empty/>
      <note><![CDATA[<b>bold</b>]]></note>
      <addr><city>Oslo</city></addr>
    </row>
    <row
        id="2">plain text</row>
  </rows>
</export>
`;
    const r = await read(xml);
    expect(r.rows).toEqual([
      {
        '@id': '1',
        '@kind': 'a&b',
        name: 'Ann <Zoë> 😀',
        tag: ['x', 'y'],
        price: { '@currency': 'EUR', '#text': '9.50' },
        empty: '',
        note: '<b>bold</b>',
        addr: { city: 'Oslo' },
      },
      { '@id': '2', '#text': 'plain text' },
    ]);
    expect(r.lines).toEqual([5, 13]);
    expect(r.errors).toEqual([]);
    expect(r.fatal).toBeUndefined();
  });

  it('matches a prefixed row element and keeps names as written', async () => {
    const r = await read('<a:list xmlns:a="urn:x"><a:row a:k="1"><a:v>1</a:v></a:row></a:list>');
    expect(r.rows).toEqual([{ '@a:k': '1', 'a:v': '1' }]);
  });

  it('handles element names that are special in JavaScript', async () => {
    const r = await read('<r><row><__proto__>x</__proto__><constructor>y</constructor></row></r>');
    expect(r.rows).toEqual([JSON.parse('{"__proto__":"x","constructor":"y"}')]);
  });

  it('fails at the first byte XML cannot hold, after the records before it, at any chunk size', async () => {
    const nul = await read(Buffer.from('<rows><row>a</row><row>x\u0000y</row></rows>'));
    expect(nul.rows).toEqual([{ '#text': 'a' }]);
    expect(nul.fatal?.message).toBe('invalid XML at byte offset 24: byte 0x00 is not allowed in XML');
    const utf8 = await read(
      Buffer.concat([
        Buffer.from('<rows><row>a</row><row>'),
        Buffer.from([0xff]),
        Buffer.from('</row></rows>'),
      ]),
    );
    expect(utf8.rows).toEqual([{ '#text': 'a' }]);
    expect(utf8.fatal?.message).toBe('invalid UTF-8 at byte offset 23 (XML input must be UTF-8)');
  });

  it('refuses a DOCTYPE, with or without entity definitions, anywhere', async () => {
    const xxe =
      '<?xml version="1.0"?>\n<!DOCTYPE r [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n<r><row>&xxe;</row></r>';
    const laughs =
      '<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]><lolz><row>&lol2;</row></lolz>';
    for (const doc of [
      xxe,
      laughs,
      '<!DOCTYPE html><r><row>1</row></r>',
      '<r><row>1</row><!DOCTYPE r></r>',
    ]) {
      const r = await read(doc);
      expect(r.fatal?.message).toBe(XML_DOCTYPE_ERROR);
      expect(JSON.stringify(r.rows)).not.toContain('root:');
    }
    expect((await read(xxe)).fatal?.line).toBe(2);
  });

  it('never expands entities other than the predefined ones', async () => {
    const r = await read('<r><row>&nbsp;&copy;</row></r>');
    expect(r.fatal?.message).toMatch(/^invalid XML at line 1, column \d+: Invalid character entity/);
  });

  it('fails on invalid XML with the line, after the records before it', async () => {
    const r = await read('<r>\n<row>1</row>\n<row>2</row>\n<row>3</oops>\n<row>4</row></r>');
    expect(r.rows).toEqual([{ '#text': '1' }, { '#text': '2' }]);
    expect(r.fatal?.message).toMatch(/^invalid XML at line 4, column \d+: Unexpected close tag$/);
    expect(r.fatal?.line).toBe(4);
    expect((await read('<r><row>1</row>')).fatal?.message).toMatch(/Unclosed root tag/);
    expect((await read('not xml at all')).fatal?.message).toMatch(/Non-whitespace before first tag/);
  });

  it('refuses an empty file and a document without elements', async () => {
    expect((await read('')).fatal?.message).toBe('the file is empty');
    expect((await read('  \n')).fatal?.message).toBe('the file is empty');
    expect((await read('<?xml version="1.0"?>')).fatal?.message).toBe('the XML document has no root element');
  });

  it('refuses invalid UTF-8', async () => {
    const r = await read(
      Buffer.concat([Buffer.from('<r><row>'), Buffer.from([0xff]), Buffer.from('</row></r>')]),
    );
    expect(r.fatal?.message).toBe('invalid UTF-8 at byte offset 8 (XML input must be UTF-8)');
  });

  it('makes a record over maxRecordBytes a row error and continues', async () => {
    const r = await read(`<r><row id="7"><a>${'x'.repeat(200)}</a><b><c/></b></row><row>ok</row></r>`, {
      maxRecordBytes: 100,
    });
    expect(r.rows).toEqual([{ '#text': 'ok' }]);
    expect(r.errors).toEqual([{ line: 1, reason: 'record exceeds 100 bytes', raw: '<row id="7">' }]);
  });

  // Audit finding 3: sax kept every open element (9 MiB of `<a>` took 425 MiB of heap) and read
  // the whole chunk before any error; the limit ends the read where it is passed.
  it('refuses elements nested deeper than MAX_XML_DEPTH, naming the limit, where it is passed', async () => {
    const open = (n: number) => '<a>'.repeat(n);
    const close = (n: number) => '</a>'.repeat(n);
    expect(await read(`${open(MAX_XML_DEPTH)}${close(MAX_XML_DEPTH)}`)).toEqual({
      rows: [],
      lines: [],
      errors: [],
    });
    const deep = await read(`<r><row>1</row>\n${open(MAX_XML_DEPTH)}${close(MAX_XML_DEPTH)}</r>`);
    expect(deep.rows).toEqual([{ '#text': '1' }]);
    expect(deep.fatal?.message).toBe('XML nested deeper than 256 elements at line 2, column 768');
    expect(deep.fatal?.line).toBe(2);

    // An 8 MiB sample in one chunk (what /pipeline/generate reads) stops at the limit, not at its end.
    const hostile = open((8 * 1024 * 1024) / 3);
    const started = process.cpuUsage();
    const r = await readWith(hostile, {}, 1 << 30);
    const used = process.cpuUsage(started);
    expect(r.fatal?.message).toBe('XML nested deeper than 256 elements at line 1, column 771');
    expect((used.user + used.system) / 1000).toBeLessThan(500);
  });

  // Audit finding 8: a deep element inside a record overflowed the stack when the record was
  // written as JSON, and the file failed as "invalid XML … Maximum call stack size exceeded".
  it('reports a record nested deeper than the document limit as that limit, not a stack overflow', async () => {
    const n = 262_144;
    const r = await readWith(`<r><row>${'<a>'.repeat(n)}${'</a>'.repeat(n)}</row></r>`, {}, 1 << 30);
    expect(r.fatal?.message).toBe('XML nested deeper than 256 elements at line 1, column 773');
  });

  it('makes a record nested deeper than MAX_XML_RECORD_DEPTH levels a row error, as JSON does', async () => {
    const nested = (levels: number) => `${'<a>'.repeat(levels - 1)}x${'</a>'.repeat(levels - 1)}`;
    const r = await read(
      `<r><row>${nested(MAX_XML_RECORD_DEPTH)}</row>\n<row id="2">${nested(MAX_XML_RECORD_DEPTH + 1)}</row><row>ok</row></r>`,
    );
    expect(r.rows).toHaveLength(2);
    expect(JSON.stringify(r.rows[0])).toBe(
      `${'{"a":'.repeat(MAX_XML_RECORD_DEPTH - 2)}{"a":"x"${'}'.repeat(MAX_XML_RECORD_DEPTH - 1)}`,
    );
    expect(r.rows[1]).toEqual({ '#text': 'ok' });
    expect(r.errors).toEqual([{ line: 2, reason: 'nesting deeper than 64 levels', raw: '<row id="2">' }]);
  });

  it('refuses an element with more than MAX_XML_ATTRIBUTES attributes where it is passed', async () => {
    const tag = (n: number) => `<r ${Array.from({ length: n }, (_, i) => `a${i}="1"`).join(' ')}/>`;
    expect((await read(tag(MAX_XML_ATTRIBUTES))).fatal).toBeUndefined();
    expect((await read(tag(MAX_XML_ATTRIBUTES + 1))).fatal?.message).toBe(
      'XML element with more than 1000 attributes at line 1, column 8902',
    );
    const started = process.cpuUsage();
    const r = await readWith(tag(200_000), {}, 1 << 30);
    const used = process.cpuUsage(started);
    expect(r.fatal?.message).toBe('XML element with more than 1000 attributes at line 1, column 8902');
    expect((used.user + used.system) / 1000).toBeLessThan(500);
  });

  it('refuses open elements holding more than four records of attributes, and frees closed ones', async () => {
    const attr = (name: string) => `${name}="${'x'.repeat(149)}"`;
    const siblings = `<r>${Array.from({ length: 10 }, (_, i) => `<s ${attr(`a${i}`)}/>`).join('')}</r>`;
    expect((await read(siblings, { maxRecordBytes: 100 })).fatal).toBeUndefined();
    const nested = `<r ${attr('a')}><s ${attr('b')}><row ${attr('c')}>1</row></s></r>`;
    expect((await read(nested, { maxRecordBytes: 100 })).fatal?.message).toBe(
      'XML open elements with more than 400 bytes of attributes at line 1, column 472',
    );
  });

  it('yields nothing when there is no row element, and cuts batches', async () => {
    expect((await read('<r><other/></r>')).rows).toEqual([]);
    const batches: RecordBatch[] = [];
    const xml = `<r>${'<row>1</row>'.repeat(7)}</r>`;
    for await (const b of readXml(chunked(xml, 10), { rowElement: 'row', batchRows: 3, minChunkBytes: 1 })) {
      batches.push(b);
    }
    expect(batches.map((b) => b.rows.length)).toEqual([3, 3, 1]);
  });

  it('requires rowElement', async () => {
    await expect(readXml(chunked('<r/>', 4), { rowElement: ' ' }).next()).rejects.toThrow(
      'the XML rowElement option is required',
    );
  });

  it('gives the same records and errors at any chunk size for malformed input (seeded)', async () => {
    let seed = 11;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const pieces = [
      '<row>',
      '</row>',
      '<row a="1">',
      '<x>',
      '</x>',
      '<y/>',
      'text',
      '\n',
      '&amp;',
      '&bad;',
      'é',
      '<!DOCTYPE r [\n]>',
      '<!-- c -->',
      '<![CDATA[<]]>',
      '<',
      '"',
    ];
    for (let round = 0; round < 150; round++) {
      const body = Array.from({ length: rand(25) }, () => pieces[rand(pieces.length)]).join('');
      const xml = `<r>\n${body}${rand(3) ? '</r>' : ''}`;
      const opts = { maxRecordBytes: rand(2) ? 12 : undefined, batchRows: 1 + rand(3) };
      const run = async (size: number) => {
        const r = await readWith(xml, opts, size);
        return {
          ...r,
          fatal: r.fatal && `${r.fatal.line}: ${r.fatal.message}`,
        };
      };
      const whole = await run(1 << 30);
      for (const size of [1, 3]) expect(await run(size)).toEqual(whole);
    }
  });
});

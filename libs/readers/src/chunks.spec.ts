import { Readable } from 'node:stream';
import { ChunkDecoder, MAX_CHUNK, rechunk } from './chunks';

async function collect(input: Readable, min?: number): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for await (const c of rechunk(input, min)) out.push(c);
  return out;
}

describe('rechunk', () => {
  it('coalesces small chunks and splits large ones without losing bytes', async () => {
    const small = Array.from({ length: 10 }, (_, i) => Buffer.from([i]));
    expect((await collect(Readable.from(small), 4)).map((b) => [...b])).toEqual([
      [0, 1, 2, 3],
      [4, 5, 6, 7],
      [8, 9],
    ]);
    const big = Buffer.alloc(MAX_CHUNK * 2 + 5, 7);
    const parts = await collect(Readable.from([big]));
    expect(parts.map((p) => p.length)).toEqual([MAX_CHUNK, MAX_CHUNK, 5]);
    expect((await collect(Readable.from(['ab', 'c']), 1)).map(String)).toEqual(['ab', 'c']);
  });
});

describe('ChunkDecoder', () => {
  const text = 'a€b😀c é\n';

  it('cuts fields by byte position at every chunk split of multi-byte characters', () => {
    const bytes = Buffer.from(text);
    for (let split = 0; split <= bytes.length; split++) {
      const d = new ChunkDecoder('utf-8');
      const first = d.decode(bytes.subarray(0, split));
      const second = d.decode(bytes.subarray(split));
      const rest = d.end();
      expect(rest.length).toBe(0);
      expect(first.badPos).toEqual([]);
      expect(second.badPos).toEqual([]);
      expect(first.slice(0, first.length) + second.slice(0, second.length)).toBe(text);
      expect(first.field(0, first.length, false) + second.field(0, second.length, false)).toBe(text);
    }
  });

  it('cuts ASCII fields from the latin1 text and decodes the others as UTF-8', () => {
    const c = new ChunkDecoder('utf-8').decode(Buffer.from('ab,€€,😀x,,é'));
    expect([
      c.field(0, 2, true),
      c.field(3, 9, false),
      c.field(10, 15, false),
      c.field(16, 16, true),
    ]).toEqual(['ab', '€€', '😀x', '']);
  });

  it('locates invalid sequences with their file offsets', () => {
    const d = new ChunkDecoder('utf-8');
    d.decode(Buffer.from('abc'));
    const c = d.decode(
      Buffer.from([0x41, 0xc3, 0x28, 0xe2, 0x82, 0x41, 0xed, 0xa0, 0x80, 0xf0, 0x9f, 0x98, 0x80]),
    );
    expect(c.badPos).toEqual([1, 3, 6, 7, 8]);
    expect(c.badOffsets).toEqual([4, 6, 9, 10, 11]);
    expect(c.field(9, 13, false)).toBe('😀');
    expect(c.slice(0, 3)).toBe('A\uFFFD(');
    const t = new ChunkDecoder('utf-8');
    t.decode(Buffer.from([0x61, 0xe2, 0x82]));
    expect(t.end().badOffsets).toEqual([1]);
  });

  it('drops a BOM at the start only, and decodes latin1 as is', () => {
    const d = new ChunkDecoder('utf-8');
    const parts = [
      Buffer.from([0xef]),
      Buffer.from([0xbb]),
      Buffer.from([0xbf, 0x61]),
      Buffer.from('\uFEFF'),
    ];
    expect(parts.map((p) => d.decode(p)).map((c) => c.slice(0, c.length))).toEqual(['', '', 'a', '\uFEFF']);
    const l = new ChunkDecoder('latin1').decode(Buffer.from([0xef, 0xbb, 0xbf, 0xe9]));
    expect(l.field(0, 4, true)).toBe('ï»¿é');
  });
});

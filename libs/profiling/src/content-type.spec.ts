import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sniffContent } from './content-type';

const PDF = readFileSync(join(__dirname, '../../../test/corpora/documents/travel-policy.pdf'));

describe('sniffContent', () => {
  it('names binary formats by their signature, whatever the rest', () => {
    expect(sniffContent(PDF)).toEqual({ kind: 'binary', type: 'a PDF document' });
    expect(sniffContent(Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'))).toEqual({
      kind: 'binary',
      type: 'a PNG image',
    });
    expect(sniffContent(Buffer.from('504b0304140000000800', 'hex')).kind).toBe('binary');
    expect(sniffContent(Buffer.from('fffe6100', 'hex'))).toMatchObject({
      type: expect.stringMatching(/UTF-16/),
    });
  });

  it('reads a head thick with NUL or control bytes as binary data', () => {
    const unknown = Buffer.alloc(512, 0);
    unknown.write('MAGIC?', 0);
    expect(sniffContent(unknown)).toEqual({ kind: 'binary', type: 'binary data (it contains NUL bytes)' });
    expect(sniffContent(Buffer.alloc(64, 0x01)).kind).toBe('binary');
    // Bytes of no known format (encrypted or compressed without a signature): a fixed pseudo-random head.
    let x = 1;
    const noise = Buffer.from(
      Array.from({ length: 4096 }, () => ((x = (x * 1103515245 + 12345) % 2 ** 31) >> 16) & 255),
    );
    expect(sniffContent(noise).kind).toBe('binary');
  });

  it.each([
    ['CSV', Buffer.from('id,name\n1,Ann\n2,Bob\n')],
    ['CSV with a stray NUL in one row', Buffer.from('a,b\n1,x\n2,nul\u0000here\n')],
    ['Latin-1 CSV', Buffer.from('id,city\n1,M\xfcnchen\n', 'latin1')],
    ['UTF-8 CSV with a BOM', Buffer.from('\ufeffid;name\r\n1;Zoë\r\n')],
    ['JSON', Buffer.from('[{"a":1},{"a":2}]')],
    ['a 3-byte broken JSON', Buffer.from([0x5b, 0x00, 0x5d])],
    ['XML', Buffer.from('<?xml version="1.0"?><rows><row a="1"/></rows>')],
    ['a CSV starting with PAR1 or MZ', Buffer.from('PAR100,MZ\n1,2\n')],
  ])('reads %s as text', (_name, bytes) => {
    expect(sniffContent(bytes)).toEqual({ kind: 'text' });
  });
});

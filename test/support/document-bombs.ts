/**
 * Decompression bombs for the document parser, written in streaming fashion: a chunk of spaces is
 * deflated over and over, so a 900 MB part costs a few seconds of zlib and under a megabyte of memory
 * and disk.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { constants, createDeflate, createDeflateRaw, crc32, deflateSync } from 'node:zlib';
import type { ParseLimits } from '@tapyard/documents';
import { nodeEntryArgs } from '@tapyard/core';

const MiB = 1024 * 1024;
const SPACES = Buffer.alloc(MiB, 0x20);

interface Deflated {
  data: Buffer;
  crc: number;
  size: number;
}

/** `head`, `spaces` bytes of spaces, then `tail`, through zlib (`raw` for zip entries). */
async function deflateSpaces(head: string, spaces: number, tail: string, raw: boolean): Promise<Deflated> {
  const z = raw
    ? createDeflateRaw({ level: constants.Z_BEST_COMPRESSION })
    : createDeflate({ level: constants.Z_BEST_COMPRESSION });
  const out: Buffer[] = [];
  z.on('data', (c: Buffer) => out.push(c));
  const ended = new Promise<void>((resolve, reject) => z.on('end', resolve).on('error', reject));
  let crc = 0;
  const write = async (b: Buffer): Promise<void> => {
    crc = crc32(b, crc);
    if (!z.write(b)) await new Promise((resolve) => z.once('drain', resolve));
  };
  await write(Buffer.from(head));
  for (let left = spaces; left > 0; left -= SPACES.length) {
    await write(left >= SPACES.length ? SPACES : SPACES.subarray(0, left));
  }
  await write(Buffer.from(tail));
  z.end();
  await ended;
  return { data: Buffer.concat(out), crc, size: Buffer.byteLength(head) + spaces + Buffer.byteLength(tail) };
}

interface ZipEntry {
  name: string;
  body: Deflated;
  /** The uncompressed size the zip claims (a lie when it differs from the body's). */
  declaredSize?: number;
}

/** A zip of deflated entries: local headers and data, then the central directory. */
function zip(entries: ZipEntry[]): Buffer {
  const parts: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = Buffer.from(e.name);
    const size = e.declaredSize ?? e.body.size;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(8, 8);
    local.writeUInt32LE(e.body.crc >>> 0, 14);
    local.writeUInt32LE(e.body.data.length, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.length, 26);
    const dir = Buffer.alloc(46);
    dir.writeUInt32LE(0x02014b50, 0);
    dir.writeUInt16LE(20, 4);
    dir.writeUInt16LE(20, 6);
    dir.writeUInt16LE(8, 10);
    dir.writeUInt32LE(e.body.crc >>> 0, 16);
    dir.writeUInt32LE(e.body.data.length, 20);
    dir.writeUInt32LE(size, 24);
    dir.writeUInt16LE(name.length, 28);
    dir.writeUInt32LE(offset, 42);
    parts.push(local, name, e.body.data);
    central.push(dir, name);
    offset += local.length + name.length + e.body.data.length;
  }
  const directory = Buffer.concat(central);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...parts, directory, end]);
}

const W = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main';

/**
 * A DOCX whose word/document.xml holds `spaces` bytes of spaces inside one run of text; `lie` makes the
 * zip declare that part no larger than its compressed bytes.
 */
export async function writeDocxBomb(path: string, spaces: number, lie = false): Promise<number> {
  const small = (text: string): Promise<Deflated> => deflateSpaces(text, 0, '', true);
  const document = await deflateSpaces(
    `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="${W}"><w:body><w:p><w:r><w:t xml:space="preserve">bomb`,
    spaces,
    '</w:t></w:r></w:p></w:body></w:document>',
    true,
  );
  const bytes = zip([
    {
      name: '[Content_Types].xml',
      body: await small(
        '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
          '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
          '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
      ),
    },
    {
      name: '_rels/.rels',
      body: await small(
        '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
          '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>',
      ),
    },
    { name: 'word/document.xml', body: document, ...(lie ? { declaredSize: document.data.length } : {}) },
  ]);
  await writeFile(path, bytes);
  return bytes.length;
}

/** Ways a PDF can hide a Flate stream from a naive scan; pdf.js decodes each of them all the same. */
export const PDF_EVASIONS = [
  'escaped-filter-name',
  'double-flate',
  'unusual-window-size',
  'blanks-after-keyword',
  'wrong-xref',
] as const;
export type PdfEvasion = (typeof PDF_EVASIONS)[number];

/** A PDF whose pages each have a content stream of Flate data inflating to `spaces` bytes of spaces. */
export async function writePdfBomb(
  path: string,
  spaces: number,
  evasion?: PdfEvasion,
  pages = 1,
): Promise<number> {
  let { data } = await deflateSpaces('BT /F1 12 Tf 72 720 Td (bomb) Tj ET', spaces, '', false);
  let filter = '/FlateDecode';
  let keyword = 'stream\n';
  if (evasion === 'escaped-filter-name') filter = '/Fl#61teDecode';
  if (evasion === 'double-flate') {
    filter = '[/FlateDecode /FlateDecode]';
    data = deflateSync(data);
  }
  if (evasion === 'unusual-window-size') {
    // CMF 0xf8 declares a 2^23-byte window, which zlib refuses; the check bits stay right.
    data = Buffer.concat([Buffer.from([0xf8, 31 - ((0xf8 << 8) % 31)]), data.subarray(2)]);
  }
  if (evasion === 'blanks-after-keyword') keyword = 'stream  \r\n';
  const chunks: Buffer[] = [Buffer.from('%PDF-1.4\n')];
  const offsets: number[] = [];
  let length = chunks[0].length;
  const add = (...parts: (string | Buffer)[]): void => {
    for (const p of parts) {
      const b = typeof p === 'string' ? Buffer.from(p, 'latin1') : p;
      chunks.push(b);
      length += b.length;
    }
  };
  const object = (n: number, body: string | (string | Buffer)[]): void => {
    offsets[n] = length;
    if (typeof body === 'string') add(`${n} 0 obj\n${body}\nendobj\n`);
    else add(`${n} 0 obj\n`, ...body, '\nendobj\n');
  };
  const kids = Array.from({ length: pages }, (_, i) => 4 + 2 * i);
  object(1, '<< /Type /Catalog /Pages 2 0 R >>');
  object(2, `<< /Type /Pages /Kids [${kids.map((k) => `${k} 0 R`).join(' ')}] /Count ${pages} >>`);
  object(3, '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>');
  for (const k of kids) {
    object(
      k,
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents ${k + 1} 0 R ` +
        '/Resources << /Font << /F1 3 0 R >> >> >>',
    );
    object(k + 1, [`<< /Length ${data.length} /Filter ${filter} >>\n${keyword}`, data, '\nendstream']);
  }
  const xref = length;
  // A table pointing nowhere: pdf.js rebuilds it by scanning the file for objects.
  const shift = evasion === 'wrong-xref' ? 7 : 0;
  const numbers = Array.from({ length: offsets.length - 1 }, (_, i) => i + 1);
  add(
    `xref\n0 ${offsets.length}\n0000000000 65535 f \n`,
    ...numbers.map((n) => `${String(offsets[n] + shift).padStart(10, '0')} 00000 n \n`),
    `trailer\n<< /Size ${offsets.length} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`,
  );
  await writeFile(path, Buffer.concat(chunks));
  return length;
}

export interface MeasuredParse {
  /** The DocumentError's message, or null when text came out. */
  error: string | null;
  /** Peak RSS of the process that called extractText and of every process it started, the largest. */
  peakRssBytes: number;
  /** Processes the caller still had once extractText had settled. */
  childrenLeft: number;
}

const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
// RUSAGE_CHILDREN's maxrss is the largest peak RSS among all descendants waited for, grandchildren
// included (Linux reports it in KiB).
const MEASURE =
  'import resource, subprocess, sys\n' +
  'subprocess.run(sys.argv[1:], check=True)\n' +
  'print("maxrss", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)';

/**
 * Calls extractText in a Node process of its own, as the worker does, and measures it: the largest
 * peak RSS of that process and the parse process it starts, and whether it left any process behind.
 */
export function parseMeasured(
  path: string,
  filename: string,
  limits: Partial<ParseLimits> = {},
): Promise<MeasuredParse> {
  const driver = join(__dirname, 'parse-driver.ts');
  const child = spawn(PYTHON, ['-c', MEASURE, process.execPath, ...nodeEntryArgs(driver)], {
    env: { ...process.env, PARSE_DRIVER_INPUT: JSON.stringify({ path, filename, limits }) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      const result = /^result (.*)$/m.exec(out);
      const rss = /^maxrss (\d+)$/m.exec(out);
      if (code !== 0 || !result || !rss)
        return reject(new Error(`the parse driver failed (${code}): ${out}`));
      const r = JSON.parse(result[1]) as Omit<MeasuredParse, 'peakRssBytes'>;
      resolve({ ...r, peakRssBytes: Number(rss[1]) * 1024 });
    });
  });
}

/**
 * What a file's first bytes say it is, whatever its name: a data file (CSV, JSON, XML) is text, so a
 * known binary signature, UTF-16, or a head thick with NUL and control bytes means it is something
 * else. Invalid UTF-8 alone does not: a Latin-1 CSV is a data file too.
 */
export type SniffedContent = { kind: 'text' } | { kind: 'binary'; type: string };

/** Enough of the head to see a signature and judge the bytes. */
export const SNIFF_BYTES = 4096;
const MIN_BINARY_BYTES = 8;
// NUL and control bytes make about 11 % of random or compressed bytes, next to none of text.
const BINARY_SHARE = 0.05;

// Signatures made only of printable bytes are long enough that no data file starts with them by chance.
const SIGNATURES: [magic: number[], type: string][] = [
  [[0x25, 0x50, 0x44, 0x46, 0x2d], 'a PDF document'],
  [[0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'a PNG image'],
  [[0xff, 0xd8, 0xff], 'a JPEG image'],
  [[0x47, 0x49, 0x46, 0x38, 0x37, 0x61], 'a GIF image'],
  [[0x47, 0x49, 0x46, 0x38, 0x39, 0x61], 'a GIF image'],
  [[0x49, 0x49, 0x2a, 0x00], 'a TIFF image'],
  [[0x4d, 0x4d, 0x00, 0x2a], 'a TIFF image'],
  [[0x50, 0x4b, 0x03, 0x04], 'a ZIP archive or an Office document (xlsx, docx)'],
  [[0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1], 'a legacy Office document (xls, doc)'],
  [[0x1f, 0x8b], 'gzip-compressed data'],
  [[0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00], 'xz-compressed data'],
  [[0x28, 0xb5, 0x2f, 0xfd], 'zstd-compressed data'],
  [[0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c], 'a 7z archive'],
  [[0x4f, 0x62, 0x6a, 0x01], 'an Avro file'],
  [
    [0x53, 0x51, 0x4c, 0x69, 0x74, 0x65, 0x20, 0x66, 0x6f, 0x72, 0x6d, 0x61, 0x74, 0x20, 0x33, 0x00],
    'an SQLite database',
  ],
  [[0x7f, 0x45, 0x4c, 0x46], 'an ELF executable'],
];

// Control bytes text files do not carry (tab, line feed, form feed and carriage return excepted).
const isControl = (b: number): boolean => b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0c && b !== 0x0d;

/** Reads the first bytes (SNIFF_BYTES suffice) of a file. */
export function sniffContent(head: Uint8Array): SniffedContent {
  for (const [magic, type] of SIGNATURES) {
    if (head.length >= magic.length && magic.every((b, i) => head[i] === b)) {
      return { kind: 'binary', type };
    }
  }
  if ((head[0] === 0xff && head[1] === 0xfe) || (head[0] === 0xfe && head[1] === 0xff)) {
    return { kind: 'binary', type: 'UTF-16 text (Tapyard reads UTF-8 or Latin-1)' };
  }
  const sample = head.subarray(0, SNIFF_BYTES);
  let nul = 0;
  let control = 0;
  for (const b of sample) {
    if (b === 0) nul++;
    else if (isControl(b)) control++;
  }
  // A stray NUL or control byte is a broken row of a data file (rejected, the rest loads); a head
  // full of them is a binary format that no signature above names.
  if (nul + control >= MIN_BINARY_BYTES && (nul + control) / sample.length > BINARY_SHARE) {
    return {
      kind: 'binary',
      type: nul > 0 ? 'binary data (it contains NUL bytes)' : 'binary data (it contains control bytes)',
    };
  }
  return { kind: 'text' };
}

/**
 * Light Markdown as the chunker reads it: NFC, no control characters but newlines, white space
 * collapsed within lines, paragraphs separated by exactly one blank line. Linear in the text.
 */
export function normalizeText(text: string): string {
  return (
    text
      .normalize('NFC')
      .replace(/\r\n?/g, '\n')
      // eslint-disable-next-line no-control-regex -- removing control characters is the point
      .replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b\ufeff]/g, ' ')
      .replace(/[ \t\u00a0]+/g, ' ')
      .replace(/ *\n */g, '\n')
      .replace(/\n{3,}/g, '\n\n')
      .trim()
  );
}

/**
 * The text of a plain-text or Markdown file: UTF-8 (BOM dropped), or UTF-16 with a BOM. Binary data
 * (NUL bytes) and bytes that are not UTF-8 are refused, naming the first bad offset.
 */
export function decodeText(bytes: Uint8Array, name: string): string {
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return new TextDecoder('utf-16le').decode(bytes.subarray(2));
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return new TextDecoder('utf-16be').decode(bytes.subarray(2));
  const nul = bytes.indexOf(0);
  if (nul >= 0) throw new Error(`'${name}' is binary data, not text (a NUL byte at offset ${nul})`);
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw new Error(
      `'${name}' is not UTF-8 text (invalid byte sequence at offset ${firstInvalidUtf8(bytes)}); save it as UTF-8`,
    );
  }
}

function firstInvalidUtf8(b: Uint8Array): number {
  let i = 0;
  while (i < b.length) {
    const c = b[i];
    const n =
      c < 0x80 ? 0 : c >= 0xc2 && c < 0xe0 ? 1 : c >= 0xe0 && c < 0xf0 ? 2 : c >= 0xf0 && c < 0xf5 ? 3 : -1;
    if (n < 0) return i;
    for (let k = 1; k <= n; k++) if (i + k >= b.length || (b[i + k] & 0xc0) !== 0x80) return i;
    i += n + 1;
  }
  return i;
}

import { Inflate, constants, createInflate } from 'node:zlib';
import { DecompressionBounds, DecompressionBudget } from './decompression';

const STREAM = Buffer.from('stream');
const FEED = 64 * 1024;
/** How far before `stream` its dictionary is looked for (font dictionaries with width arrays run long). */
const DICTIONARY_REACH = 64 * 1024;

/**
 * Inflates the Flate streams of a PDF as pdf.js would, filter after filter, counting what they produce
 * and keeping none of it, so that a bomb is refused before pdf.js decodes it into memory. Streams are
 * found by their `stream` keyword, not through the cross-reference table, which a hostile file may
 * break to hide one. Images and attached files are skipped: text extraction never decodes them, and a
 * blank scanned page deflates far past any ratio. The bounds hold per stream: pdf.js decodes a page's
 * streams as it reads the page and keeps none of them, so a long document may decode far more in all
 * than it ever holds. What this misses (an encrypted stream, a filter before Flate) is still capped by
 * the parse process's memory limit.
 */
export async function checkPdfStreams(
  bytes: Buffer,
  name: string,
  bounds: DecompressionBounds,
): Promise<void> {
  let from = 0;
  for (;;) {
    const at = bytes.indexOf(STREAM, from);
    if (at < 0) return;
    // Never looking back past the previous keyword keeps the scan linear in the file.
    const reach = Math.max(from, at - DICTIONARY_REACH);
    from = at + STREAM.length;
    if (at >= 3 && bytes.toString('latin1', at - 3, at) === 'end') continue;
    let start = from;
    while (bytes[start] === 0x20 || bytes[start] === 0x09) start++;
    if (bytes[start] !== 0x0d && bytes[start] !== 0x0a) continue;
    if (bytes[start] === 0x0d) start++;
    if (bytes[start] === 0x0a) start++;
    if (!zlibHeader(bytes, start)) continue;
    const window = bytes.subarray(reach, at);
    const own = decodeNames(window.toString('latin1', window.lastIndexOf('obj') + 1));
    if (/\/Subtype\s*\/Image\b|\/Type\s*\/EmbeddedFile\b/.test(own)) continue;
    const consumed = await inflateCounting(
      bytes.subarray(start + 2),
      flateLayers(own),
      new DecompressionBudget(name, bounds, 'part'),
      `the stream at byte ${start}`,
    );
    // The header replaced is as long as the stream's own, so the count of bytes used stands.
    from = start + consumed;
  }
}

/** The two bytes pdf.js checks before inflating: deflate, the check bits, no preset dictionary. */
function zlibHeader(bytes: Buffer, at: number): boolean {
  if (at + 1 >= bytes.length) return false;
  return (bytes[at] & 0x0f) === 8 && ((bytes[at] << 8) | bytes[at + 1]) % 31 === 0 && !(bytes[at + 1] & 0x20);
}

/**
 * A standard zlib header: pdf.js ignores the window size a stream declares, zlib refuses one over 32 KiB,
 * so the stream's own two bytes are replaced rather than trusted.
 */
const ZLIB_HEADER = Buffer.from([0x78, 0x9c]);

/** `#xx` escapes in names (`/Fl#61teDecode`) mean what they spell, to pdf.js as here. */
function decodeNames(text: string): string {
  return text.replace(/#([0-9a-fA-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

/**
 * How many Flate layers pdf.js peels off first. A filter this cannot read (an indirect reference, none
 * at all) still gets one attempt, as the data starts like zlib.
 */
function flateLayers(dictionary: string): number {
  const m = /\/Filter\s*(\[[^\]]*\]|\/[^\s/[\]<>()]+)/.exec(dictionary);
  if (!m) return 1;
  const names = m[1].match(/\/[^\s/[\]<>()]+/g) ?? [];
  let layers = 0;
  while (layers < names.length && /^\/(FlateDecode|Fl)$/.test(names[layers])) layers++;
  return Math.max(1, layers);
}

/**
 * Feeds `data` (a zlib stream after its header) through `layers` inflaters until the first ends (zlib stops at its own end marker, so the
 * stream's declared length is not needed), counting every layer's output against the budget. Resolves
 * with the compressed bytes used, 0 when the data is not Flate or is corrupt: pdf.js judges those.
 */
function inflateCounting(
  data: Buffer,
  layers: number,
  budget: DecompressionBudget,
  part: string,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const inflaters: Inflate[] = Array.from({ length: layers }, () =>
      createInflate({ finishFlush: constants.Z_SYNC_FLUSH }),
    );
    let fed = 0;
    let settled = false;
    const settle = (err: unknown, consumed = 0): void => {
      if (settled) return;
      settled = true;
      for (const z of inflaters) z.destroy();
      if (err) reject(err);
      else resolve(consumed);
    };
    inflaters.forEach((z, i) => {
      let produced = 0;
      z.on('data', (chunk: Buffer) => {
        produced += chunk.length;
        try {
          budget.add(part, chunk.length, produced, fed);
        } catch (err) {
          settle(err);
        }
      });
      z.on('error', () => settle(null));
      if (i + 1 < layers) z.pipe(inflaters[i + 1]);
      else z.on('end', () => settle(null, inflaters[0].bytesWritten));
    });
    const first = inflaters[0];
    first.write(ZLIB_HEADER);
    const feed = (): void => {
      while (!settled && fed < data.length) {
        const chunk = data.subarray(fed, fed + FEED);
        fed += chunk.length;
        if (!first.write(chunk)) {
          first.once('drain', feed);
          return;
        }
      }
      if (!settled) first.end();
    };
    feed();
  });
}

import * as yauzl from 'yauzl';
import type { DecompressionBudget } from './decompression';
import { Unreadable } from './unreadable';

/** A DOCX has a few dozen parts; a zip of more is not one, and its directory alone would cost memory. */
const MAX_PARTS = 10_000;

/** The parts of a DOCX by name, as mammoth reads them through its `file` input. */
export interface DocxParts {
  exists(name: string): boolean;
  read(name: string, encoding?: string): Promise<Uint8Array | string>;
  close(): void;
}

/**
 * Opens a DOCX with the decompression budget in charge: every entry is refused up front by the size
 * and ratio its central directory declares, and the bytes actually inflated are counted again as each
 * part is read (declared sizes may lie), summed over the parts mammoth reads, as it holds them all
 * while converting. Only the parts mammoth asks for are inflated, and only yauzl reads the zip, so no
 * second zip parser sees it differently.
 */
export async function openDocx(path: string, name: string, budget: DecompressionBudget): Promise<DocxParts> {
  const zip = await yauzl.openPromise(path, { autoClose: false, validateEntrySizes: false });
  const entries = new Map<string, yauzl.Entry>();
  try {
    if (zip.entryCount > MAX_PARTS) {
      throw new Unreadable(`'${name}' is refused: it has more than ${MAX_PARTS} parts, no DOCX has`);
    }
    for await (const entry of zip.eachEntry()) {
      if (entry.fileName.endsWith('/')) continue;
      const part = `entry ${quote(entry.fileName)}`;
      if (entry.isEncrypted()) throw new Unreadable(`'${name}' is refused: ${part} is encrypted`);
      if (!entry.canDecodeFileData()) {
        throw new Unreadable(
          `'${name}' is refused: ${part} uses unsupported compression method ${entry.compressionMethod}`,
        );
      }
      budget.declared(part, entry.uncompressedSize, entry.compressedSize);
      entries.set(entry.fileName, entry);
    }
  } catch (err) {
    zip.close();
    throw err;
  }
  return {
    exists: (part) => entries.has(part),
    async read(part, encoding) {
      const entry = entries.get(part);
      if (!entry) throw new Error(`no part ${quote(part)}`);
      const label = `entry ${quote(part)}`;
      const chunks: Buffer[] = [];
      let bytes = 0;
      for await (const chunk of await zip.openReadStreamPromise(entry)) {
        const b = chunk as Buffer;
        bytes += b.length;
        budget.add(label, b.length, bytes, entry.compressedSize);
        chunks.push(b);
      }
      const whole = Buffer.concat(chunks, bytes);
      if (encoding === 'base64') return whole.toString('base64');
      return encoding ? new TextDecoder(encoding).decode(whole) : whole;
    },
    close: () => zip.close(),
  };
}

/** Names come from the file: one printable line of bounded length in messages. */
function quote(name: string): string {
  const printable = name.replace(
    // eslint-disable-next-line no-control-regex -- escaping control characters is the point
    /[\u0000-\u001f\u007f]/g,
    (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );
  return `'${printable.length > 200 ? `${printable.slice(0, 200)}…` : printable}'`;
}

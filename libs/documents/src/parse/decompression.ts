import { Unreadable } from './unreadable';

export interface DecompressionBounds {
  /** Bytes a budget may count: all the parts of a DOCX together, or one PDF stream. */
  maxBytes: number;
  /** How many times its compressed size a part may grow to (parts under RATIO_SLACK are exempt). */
  maxRatio: number;
}

const MiB = 1024 * 1024;
/** A few hundred repeated bytes legitimately deflate to a handful: small parts skip the ratio. */
const RATIO_SLACK = MiB;

/**
 * Decompressed bytes of one document (or of one of its parts, `scope: 'part'`), counted as they are
 * inflated (what a part declares may lie), against an absolute bound and a ratio: passing either
 * refuses the document, naming the part.
 */
export class DecompressionBudget {
  private total = 0;

  constructor(
    private readonly document: string,
    private readonly bounds: DecompressionBounds,
    private readonly scope: 'document' | 'part' = 'document',
  ) {}

  /** Refuses a part by what it declares, before any of it is inflated. */
  declared(part: string, bytes: number, compressedBytes: number): void {
    this.check(part, bytes, compressedBytes, bytes);
  }

  /** Counts `n` more bytes of `part`, which has produced `partBytes` in all from `compressedBytes`. */
  add(part: string, n: number, partBytes: number, compressedBytes: number): void {
    this.total += n;
    this.check(part, partBytes, compressedBytes, this.total);
  }

  private check(part: string, partBytes: number, compressedBytes: number, total: number): void {
    const { maxBytes, maxRatio } = this.bounds;
    if (total > maxBytes) {
      const limit = `exceeds the limit of ${formatMiB(maxBytes)}`;
      throw new Unreadable(
        this.scope === 'part'
          ? `'${this.document}' is refused: the decompressed size of ${part} ${limit}`
          : `'${this.document}' is refused: its decompressed size ${limit} (at ${part})`,
      );
    }
    if (partBytes > maxRatio * compressedBytes + RATIO_SLACK) {
      throw new Unreadable(
        `'${this.document}' is refused: the decompressed size of ${part} exceeds ${maxRatio} times its compressed size`,
      );
    }
  }
}

function formatMiB(bytes: number): string {
  return bytes % MiB === 0 ? `${bytes / MiB} MiB` : `${bytes} bytes`;
}

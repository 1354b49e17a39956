import { formatBytes } from './limits';
import { maskSecrets, maskableSecrets } from './masking';

export interface CollectedLogs {
  logs: string;
  truncated: boolean;
  totalBytes: number;
}

/**
 * Keeps the first maxLogBytes of a run's stdout+stderr, in arrival order, in bounded memory.
 * Masking happens once on the assembled text, so a secret split across chunks is still caught;
 * a little more than the cap is retained so a secret straddling the cut is masked whole.
 */
export class LogCollector {
  private readonly chunks: Buffer[] = [];
  private retainedBytes = 0;
  private total = 0;
  private readonly retainLimit: number;

  constructor(
    private readonly maxLogBytes: number,
    private readonly secrets: readonly string[],
  ) {
    const longest = Math.max(0, ...maskableSecrets(secrets).map((s) => Buffer.byteLength(s)));
    this.retainLimit = maxLogBytes + longest;
  }

  get totalBytes(): number {
    return this.total;
  }

  push(chunk: Buffer): void {
    this.total += chunk.length;
    const room = this.retainLimit - this.retainedBytes;
    if (room <= 0) return;
    const kept = chunk.length <= room ? chunk : chunk.subarray(0, room);
    this.chunks.push(kept);
    this.retainedBytes += kept.length;
  }

  /** The raw head of the logs, unmasked: only for classifying how the sandbox failed. */
  head(bytes: number): string {
    return Buffer.concat(this.chunks).subarray(0, bytes).toString('utf8');
  }

  finish(): CollectedLogs {
    const masked = maskSecrets(Buffer.concat(this.chunks).toString('utf8'), this.secrets);
    if (this.total <= this.maxLogBytes) return { logs: masked, truncated: false, totalBytes: this.total };
    const note =
      `\n[logs truncated: the script printed ${formatBytes(this.total)}; ` +
      `only the first ${formatBytes(this.maxLogBytes)} are kept]`;
    return { logs: truncateUtf8(masked, this.maxLogBytes) + note, truncated: true, totalBytes: this.total };
  }
}

/** Cuts to at most maxBytes of UTF-8 without leaving half a character behind. */
export function truncateUtf8(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  let end = maxBytes;
  // Step back over continuation bytes (10xxxxxx) to the start of the cut character.
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end -= 1;
  return bytes.subarray(0, end).toString('utf8');
}

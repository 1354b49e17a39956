import { promises as fsp } from 'fs';
import * as path from 'path';
import { types } from 'util';
import { ExtractLimits } from './limits';

export interface ExtractedFile {
  /** The entry's path inside the archive, normalised, with '/' separators. */
  name: string;
  /** Where its bytes were written (inside outDir, named by a counter). */
  path: string;
  bytes: number;
}

export interface SkippedEntry {
  name: string;
  reason: string;
}

export interface ExtractResult {
  files: ExtractedFile[];
  skipped: SkippedEntry[];
}

/** The whole archive is refused; the message is one sentence naming the archive and the offending entry. */
export class ArchiveRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ArchiveRefusedError';
  }
}

/** State of one extractArchive call. */
export class Extraction {
  readonly files: ExtractedFile[] = [];
  readonly skipped: SkippedEntry[] = [];
  private readonly written: string[] = [];
  private created = 0;
  entries = 0;
  totalBytes = 0;
  /** The first refusal wins: errors after it are its echoes (destroyed streams, premature closes). */
  refusal: ArchiveRefusedError | null = null;
  /** The entry being read, to name it when a library reports corruption. */
  current: string | null = null;
  /** The caller's own failure is passed through as it is, never mistaken for a corrupt archive. */
  callerError: unknown = null;

  constructor(
    readonly archiveName: string,
    private readonly outDir: string,
    readonly limits: ExtractLimits,
    private readonly acceptName: (name: string) => boolean,
  ) {}

  accept(name: string): boolean {
    try {
      return this.acceptName(name);
    } catch (err) {
      this.callerError = err;
      throw err;
    }
  }

  refuse(problem: string): ArchiveRefusedError {
    const err = new ArchiveRefusedError(`archive ${quote(this.archiveName)} refused: ${problem}`);
    this.refusal ??= err;
    return err;
  }

  corrupt(reason: string): ArchiveRefusedError {
    const where = this.current === null ? '' : ` at entry ${quote(this.current)}`;
    return this.refuse(`the archive is corrupt${where} (${reason})`);
  }

  /**
   * Creates the next output file exclusively (never replacing, never following a planted symlink) and
   * registers it at once, so that a failure half-way removes it, and only files this call created.
   */
  async createTarget(): Promise<{ target: string; handle: fsp.FileHandle }> {
    this.created += 1;
    const target = path.join(this.outDir, String(this.created).padStart(6, '0'));
    const handle = await fsp.open(target, 'wx');
    this.written.push(target);
    return { target, handle };
  }

  async removeWritten(): Promise<void> {
    await Promise.all(this.written.map((file) => fsp.rm(file, { force: true })));
    this.written.length = 0;
  }
}

export function toError(err: unknown): Error {
  // Node's own errors (zlib, fs) fail `instanceof Error` when this code runs in another realm (jest's vm).
  if (err instanceof Error || types.isNativeError(err)) return err;
  return new Error(String(err));
}

/** Names come from the archive: keep messages one printable line of bounded length. */
export function quote(name: string): string {
  const printable = Array.from(name, (c) => {
    const code = c.charCodeAt(0);
    return code < 0x20 || code === 0x7f ? `\\x${code.toString(16).padStart(2, '0')}` : c;
  }).join('');
  return `'${printable.length > 200 ? `${printable.slice(0, 200)}…` : printable}'`;
}

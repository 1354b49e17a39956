import { ArchiveKind } from './kinds';
import { ArchiveRefusedError, Extraction, ExtractResult, toError } from './extraction';
import { extractGz } from './gzip';
import { ExtractLimits, resolveLimits } from './limits';
import { extractTar } from './tar';
import { extractZip, zipNameRefusal } from './zip';

export interface ExtractOptions {
  limits?: Partial<ExtractLimits>;
  /** Whether a regular file (by its normalised name) is worth extracting; others are skipped, not refused. */
  accept: (name: string) => boolean;
  /** The name the user knows the archive by; used in messages and to name the single entry of a .gz. */
  archiveName: string;
}

const EXTRACTORS: Record<ArchiveKind, (x: Extraction, archivePath: string) => Promise<void>> = {
  zip: extractZip,
  tar: (x, archivePath) => extractTar(x, archivePath, false),
  'tar.gz': (x, archivePath) => extractTar(x, archivePath, true),
  gz: extractGz,
};

/**
 * Extracts the regular files of an archive into `outDir` (existing, empty), each to a new file named by a
 * counter, so that entry names never become filesystem paths. Refuses the whole archive (and removes what it
 * wrote) on unsafe names, links, devices, nested archives, corruption, or when a limit is passed.
 */
export async function extractArchive(
  archivePath: string,
  kind: ArchiveKind,
  outDir: string,
  opts: ExtractOptions,
): Promise<ExtractResult> {
  const x = new Extraction(opts.archiveName, outDir, resolveLimits(opts.limits), opts.accept);
  try {
    await EXTRACTORS[kind](x, archivePath);
    // A refusal raised inside a stream could in principle be swallowed by a library; never report success.
    if (x.refusal) throw x.refusal;
  } catch (err) {
    await x.removeWritten();
    throw x.refusal ?? explain(x, err);
  }
  return { files: x.files, skipped: x.skipped };
}

/**
 * Turns a library's error into the refusal it means. I/O errors (full disk, missing archive) are not the
 * archive's fault and pass through unchanged.
 */
function explain(x: Extraction, err: unknown): Error {
  const error = toError(err);
  if (error instanceof ArchiveRefusedError || err === x.callerError) return error;
  if ('syscall' in error && typeof error.syscall === 'string') return error;
  return zipNameRefusal(x, error) ?? x.corrupt(error.message);
}

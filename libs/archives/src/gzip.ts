import { promises as fsp } from 'fs';
import { admit } from './admission';
import { Extraction } from './extraction';
import { openSource } from './source';
import { writeEntry } from './write-entry';

/** A .gz holds one file, named after the archive. */
export async function extractGz(x: Extraction, archivePath: string): Promise<void> {
  const name = admit(x, gzEntryName(x.archiveName), 'file');
  if (name === null) return;
  x.current = name;
  const { size: archiveSize } = await fsp.stat(archivePath);
  const source = openSource(x, archivePath, archiveSize);
  try {
    await writeEntry(x, name, source.stream);
  } finally {
    source.stream.destroy();
    await source.done;
  }
}

/** The base name of the archive without '.gz' (the name stored in the gzip header is not trusted). */
function gzEntryName(archiveName: string): string {
  const base = archiveName.replace(/\\/g, '/').split('/').pop() ?? '';
  return base.replace(/\.gz$/i, '');
}

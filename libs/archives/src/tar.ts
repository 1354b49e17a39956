import { promises as fsp } from 'fs';
import * as tar from 'tar-stream';
import { EntryType, admit } from './admission';
import { Extraction } from './extraction';
import { openSource } from './source';
import { writeEntry } from './write-entry';

/** tar, or tar.gz when `gzipped`: entries in the order they are stored. */
export async function extractTar(x: Extraction, archivePath: string, gzipped: boolean): Promise<void> {
  const compressedSize = gzipped ? (await fsp.stat(archivePath)).size : null;
  const source = openSource(x, archivePath, compressedSize);
  const extract = tar.extract();
  // The parser's (or gunzip's) own error says what is wrong; entry streams only echo "destroyed".
  let failure: Error | null = null;
  extract.on('error', (err: Error) => (failure ??= err));
  const closed = new Promise<void>((resolve) => extract.once('close', () => resolve()));
  // tar-stream does not see errors of the stages before it (they are piped, not pipelined).
  void source.done.then((err) => err && extract.destroy(err));
  source.stream.pipe(extract);
  let error: unknown = null;
  try {
    for await (const entry of extract) await tarEntry(x, entry);
  } catch (err) {
    error = err;
  }
  source.stream.destroy();
  await source.done;
  extract.destroy();
  await closed;
  if (error !== null) throw failure ?? error;
}

type TarEntry = AsyncIterable<unknown> & { header: tar.Header; resume(): unknown };

async function tarEntry(x: Extraction, entry: TarEntry): Promise<void> {
  x.current = entry.header.name;
  const name = admit(x, entry.header.name, tarEntryType(entry.header.type));
  if (name === null) {
    // Unread entries would stall the tar stream, so drain them (their bytes are not written anywhere);
    // `current` stays set, as a bomb in a skipped entry is still this entry's doing.
    entry.resume();
    return;
  }
  await writeEntry(x, name, chunksOf(entry));
  x.current = null;
}

/**
 * tar-stream's entries are streamx streams, which Node's pipeline mistakes for its own; as a plain async
 * iterable they are consumed (and destroyed on error) through their documented iterator.
 */
async function* chunksOf(source: AsyncIterable<unknown>): AsyncGenerator<unknown> {
  for await (const chunk of source) yield chunk;
}

function tarEntryType(type: tar.Header['type'] | null): EntryType {
  switch (type) {
    case 'file':
    case 'contiguous-file':
      return 'file';
    case 'directory':
      return 'directory';
    case 'symlink':
      return 'symlink';
    case 'link':
      return 'hardlink';
    case 'character-device':
    case 'block-device':
      return 'device';
    case 'fifo':
      return 'fifo';
    default:
      return 'other';
  }
}

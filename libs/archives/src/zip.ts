import { Readable } from 'stream';
import * as yauzl from 'yauzl';
import { EntryType, admit } from './admission';
import { ArchiveRefusedError, Extraction, quote } from './extraction';
import { checkEntryBytes, checkZipRatio, writeEntry } from './write-entry';

// zip (and jar): random access through the central directory.

const S_IFMT = 0o170000;
const ZIP_MODE_TYPES: Record<number, EntryType> = {
  0o100000: 'file',
  0o040000: 'directory',
  0o120000: 'symlink',
  0o020000: 'device',
  0o060000: 'device',
  0o010000: 'fifo',
  0o140000: 'socket',
};

export async function extractZip(x: Extraction, archivePath: string): Promise<void> {
  const zip = await openZip(archivePath);
  // yauzl may report an error when nobody is listening (e.g. closing the file); it is not ours to crash on.
  zip.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => zip.once('close', () => resolve()));
  try {
    // The central directory tells the count up front; no need to walk 10 million records to refuse.
    if (zip.entryCount > x.limits.maxEntries) {
      throw x.refuse(`it has more than ${x.limits.maxEntries} entries`);
    }
    let compressedTotal = 0;
    for (let entry = await nextZipEntry(zip); entry; entry = await nextZipEntry(zip)) {
      compressedTotal += entry.compressedSize;
      // Well-formed entries never share bytes; overlapping ones are how the best zip bombs evade ratios.
      if (compressedTotal > zip.fileSize) {
        throw x.refuse(`entry ${quote(entry.fileName)} overlaps other entries`);
      }
      await zipEntry(x, zip, entry);
    }
  } finally {
    zip.close();
    await closed;
  }
}

/** yauzl refuses unsafe names itself, as errors of the form '<problem>: <name>'. */
const YAUZL_NAME_ERRORS: [RegExp, string][] = [
  [/^absolute path: (.*)$/s, 'has an absolute path'],
  [/^invalid relative path: (.*)$/s, 'escapes the archive'],
  [/^invalid characters in fileName: (.*)$/s, 'has invalid characters in its name'],
];

/** The refusal a yauzl name error stands for, or null when `error` is not one. */
export function zipNameRefusal(x: Extraction, error: Error): ArchiveRefusedError | null {
  for (const [pattern, problem] of YAUZL_NAME_ERRORS) {
    const match = pattern.exec(error.message);
    if (match) return x.refuse(`entry ${quote(match[1])} ${problem}`);
  }
  return null;
}

function openZip(archivePath: string): Promise<yauzl.ZipFile> {
  const options: yauzl.Options = {
    lazyEntries: true,
    autoClose: true,
    validateEntrySizes: true,
    strictFileNames: false,
    decodeStrings: true,
  };
  return new Promise((resolve, reject) => {
    yauzl.open(archivePath, options, (err, zip) => (err ? reject(err) : resolve(zip)));
  });
}

function nextZipEntry(zip: yauzl.ZipFile): Promise<yauzl.Entry | null> {
  return new Promise((resolve, reject) => {
    const settle = (): void => {
      zip.off('entry', onEntry).off('end', onEnd).off('error', onError);
    };
    const onEntry = (entry: yauzl.Entry): void => {
      settle();
      resolve(entry);
    };
    const onEnd = (): void => {
      settle();
      resolve(null);
    };
    const onError = (err: Error): void => {
      settle();
      reject(err);
    };
    zip.on('entry', onEntry).on('end', onEnd).on('error', onError);
    zip.readEntry();
  });
}

async function zipEntry(x: Extraction, zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<void> {
  x.current = entry.fileName;
  const name = admit(x, entry.fileName, zipEntryType(entry));
  if (name !== null) {
    checkZipEntry(x, name, entry);
    const stream = await openZipStream(zip, entry);
    await writeEntry(x, name, stream, { compressedSize: entry.compressedSize, crc32: entry.crc32 });
  }
  x.current = null;
}

function zipEntryType(entry: yauzl.Entry): EntryType {
  // Only Unix-made zips fill the high half; elsewhere it is 0 (no type), and the name tells directories.
  const type = ZIP_MODE_TYPES[(entry.externalFileAttributes >>> 16) & S_IFMT] ?? 'file';
  return entry.fileName.endsWith('/') ? 'directory' : type;
}

/** Refuses early on what the entry declares; the same limits are enforced again on the actual bytes. */
function checkZipEntry(x: Extraction, name: string, entry: yauzl.Entry): void {
  if (entry.isEncrypted()) throw x.refuse(`entry ${quote(name)} is encrypted`);
  if (!entry.canDecodeFileData()) {
    throw x.refuse(`entry ${quote(name)} uses unsupported compression method ${entry.compressionMethod}`);
  }
  checkEntryBytes(x, name, entry.uncompressedSize);
  checkZipRatio(x, name, entry.uncompressedSize, entry.compressedSize);
}

function openZipStream(zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<Readable> {
  return new Promise((resolve, reject) => {
    zip.openReadStream(entry, (err, stream) => {
      if (err) return reject(err);
      // yauzl's size check can fire after the pipeline has torn the stream down (our own limit stopped it
      // first); the pipeline reports the errors that matter, this keeps a late one from going unhandled.
      stream.on('error', () => undefined);
      resolve(stream);
    });
  });
}

import { createReadStream, createWriteStream, promises as fsp } from 'fs';
import * as path from 'path';
import { types } from 'util';
import { Readable, Transform, TransformCallback, pipeline } from 'stream';
import { pipeline as pump } from 'stream/promises';
import * as zlib from 'zlib';
import * as tar from 'tar-stream';
import * as yauzl from 'yauzl';

export type ArchiveKind = 'zip' | 'tar' | 'tar.gz' | 'gz';

export interface ExtractLimits {
  /** Every entry counts, including directories and skipped ones. */
  maxEntries: number;
  /** Bytes actually written, summed over all extracted files. */
  maxTotalBytes: number;
  /** zip: per entry, against its compressed size; gz / tar.gz: whole stream, against the archive's size. */
  maxRatio: number;
  maxEntryBytes: number;
}

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;
/** Tiny entries legitimately expand far beyond any ratio (a few hundred zeros deflate to a handful of bytes). */
const RATIO_SLACK = MiB;

export const DEFAULT_LIMITS: ExtractLimits = Object.freeze({
  maxEntries: 10_000,
  maxTotalBytes: 10 * GiB,
  maxRatio: 200,
  maxEntryBytes: 5 * GiB,
});

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

export interface ExtractOptions {
  limits?: Partial<ExtractLimits>;
  /** Whether a regular file (by its normalised name) is worth extracting; others are skipped, not refused. */
  accept: (name: string) => boolean;
  /** The name the user knows the archive by; used in messages and to name the single entry of a .gz. */
  archiveName: string;
}

/** The whole archive is refused; the message is one sentence naming the archive and the offending entry. */
export class ArchiveRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ArchiveRefusedError';
  }
}

export function archiveKind(filename: string): ArchiveKind | null {
  const lower = filename.toLowerCase();
  if (lower.endsWith('.zip') || lower.endsWith('.jar')) return 'zip';
  if (lower.endsWith('.tar')) return 'tar';
  if (lower.endsWith('.tar.gz') || lower.endsWith('.tgz')) return 'tar.gz';
  if (lower.endsWith('.gz')) return 'gz';
  return null;
}

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

function resolveLimits(given: Partial<ExtractLimits> | undefined): ExtractLimits {
  const limits: ExtractLimits = { ...DEFAULT_LIMITS };
  for (const key of Object.keys(DEFAULT_LIMITS) as (keyof ExtractLimits)[]) {
    const value = given?.[key];
    if (value === undefined) continue;
    // An undefined or NaN limit would silently disable the check, so reject it loudly.
    if (typeof value !== 'number' || Number.isNaN(value) || value < 0) {
      throw new RangeError(`extract limit ${key} must be a non-negative number`);
    }
    limits[key] = value;
  }
  return limits;
}

/** State of one extractArchive call. */
class Extraction {
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

// ---------------------------------------------------------------------------------------------------------
// Entry admission: the same rules for every format.

type EntryType = 'file' | 'directory' | 'symlink' | 'hardlink' | 'device' | 'fifo' | 'socket' | 'other';

const TYPE_REFUSALS: Partial<Record<EntryType, string>> = {
  symlink: 'is a symbolic link',
  hardlink: 'is a hard link',
  device: 'is a device file',
  fifo: 'is a FIFO',
  socket: 'is a socket',
};

/** Returns the normalised name when the entry is to be written, null when it is ignored or skipped. */
function admit(x: Extraction, rawName: string, type: EntryType): string | null {
  x.entries += 1;
  if (x.entries > x.limits.maxEntries) throw x.refuse(`it has more than ${x.limits.maxEntries} entries`);
  const name = safeName(x, rawName);
  const refusal = TYPE_REFUSALS[type];
  if (refusal) throw x.refuse(`entry ${quote(name)} ${refusal}`);
  if (type === 'directory' || name === '' || rawName.endsWith('/')) return null;
  if (isMetadata(name)) return skip(x, name, 'metadata');
  if (type !== 'file') return skip(x, name, 'unsupported entry type');
  if (archiveKind(name) !== null) {
    throw x.refuse(
      `entry ${quote(name)} is itself an archive, and archives inside archives are not extracted`,
    );
  }
  if (!x.accept(name)) return skip(x, name, 'unsupported file type');
  return name;
}

function skip(x: Extraction, name: string, reason: string): null {
  x.skipped.push({ name, reason });
  return null;
}

/** Refuses names that could address anything outside the archive's own tree; drops '', '.' segments. */
function safeName(x: Extraction, rawName: string): string {
  if (rawName.includes('\0')) throw x.refuse(`entry ${quote(rawName)} has a NUL character in its name`);
  const slashed = rawName.replace(/\\/g, '/');
  // Covers '/x', '\\server\x' (now '//server/x') and drive letters, including drive-relative 'C:x'.
  if (slashed.startsWith('/') || /^[A-Za-z]:/.test(slashed)) {
    throw x.refuse(`entry ${quote(rawName)} has an absolute path`);
  }
  const segments = slashed.split('/');
  if (segments.includes('..')) throw x.refuse(`entry ${quote(rawName)} escapes the archive`);
  return segments.filter((s) => s !== '' && s !== '.').join('/');
}

function isMetadata(name: string): boolean {
  const segments = name.split('/');
  const last = segments[segments.length - 1];
  return segments[0] === '__MACOSX' || last.startsWith('._') || last === '.DS_Store';
}

// ---------------------------------------------------------------------------------------------------------
// Writing one entry, with the limits enforced on the bytes actually seen.

interface ZipChecks {
  compressedSize: number;
  crc32: number;
}

async function writeEntry(
  x: Extraction,
  name: string,
  source: Readable | AsyncIterable<unknown>,
  zip?: ZipChecks,
): Promise<void> {
  const { target, handle } = await x.createTarget();
  let bytes = 0;
  let crc = 0;
  const meter = new Tap(
    (chunk) => {
      bytes += chunk.length;
      x.totalBytes += chunk.length;
      checkEntryBytes(x, name, bytes);
      checkTotalBytes(x, name);
      if (zip) checkZipRatio(x, name, bytes, zip.compressedSize);
      if (zip) crc = zlib.crc32(chunk, crc);
    },
    () => {
      // yauzl checks sizes but not the CRC, which is the only guard against silently damaged data.
      if (zip && crc >>> 0 !== zip.crc32 >>> 0) throw x.corrupt('CRC mismatch');
    },
  );
  await pump(source, meter, createWriteStream(target, { fd: handle }));
  x.files.push({ name, path: target, bytes });
}

function checkEntryBytes(x: Extraction, name: string, bytes: number): void {
  if (bytes > x.limits.maxEntryBytes) {
    throw x.refuse(`entry ${quote(name)} is larger than the limit of ${size(x.limits.maxEntryBytes)}`);
  }
}

function checkTotalBytes(x: Extraction, name: string): void {
  if (x.totalBytes > x.limits.maxTotalBytes) {
    throw x.refuse(
      `entry ${quote(name)} takes the extracted total past the limit of ${size(x.limits.maxTotalBytes)}`,
    );
  }
}

function checkZipRatio(x: Extraction, name: string, bytes: number, compressedSize: number): void {
  if (bytes > x.limits.maxRatio * compressedSize + RATIO_SLACK) {
    throw x.refuse(`entry ${quote(name)} expands more than ${x.limits.maxRatio} times its compressed size`);
  }
}

/** Passes bytes through unchanged, letting checks see every chunk and the end, and fail the stream. */
class Tap extends Transform {
  constructor(
    private readonly onChunk: (chunk: Buffer) => void,
    private readonly onEnd: () => void = () => undefined,
  ) {
    super();
  }

  override _transform(chunk: unknown, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (!Buffer.isBuffer(chunk)) return callback(new TypeError('expected a byte stream'));
    try {
      this.onChunk(chunk);
      callback(null, chunk);
    } catch (err) {
      callback(toError(err));
    }
  }

  override _flush(callback: TransformCallback): void {
    try {
      this.onEnd();
      callback();
    } catch (err) {
      callback(toError(err));
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// Sequential sources: tar, tar.gz, gz.

interface Source {
  stream: Readable;
  /** Settles once every stage has closed (so the archive's file handle is released), with its error if any. */
  done: Promise<Error | null>;
}

/** The archive's bytes, gunzipped when `compressedSize` is given, with the whole-stream ratio enforced. */
function openSource(x: Extraction, archivePath: string, compressedSize: number | null): Source {
  const limit = compressedSize === null ? Infinity : x.limits.maxRatio * compressedSize + RATIO_SLACK;
  let total = 0;
  const tap = new Tap((chunk) => {
    total += chunk.length;
    if (total > limit) {
      throw x.refuse(`the archive expands more than ${x.limits.maxRatio} times its size${at(x)}`);
    }
  });
  const file = createReadStream(archivePath);
  const done = new Promise<Error | null>((resolve) => {
    const settle = (err: NodeJS.ErrnoException | null): void => resolve(err);
    if (compressedSize === null) pipeline(file, tap, settle);
    else pipeline(file, zlib.createGunzip(), tap, settle);
  });
  return { stream: tap, done };
}

function at(x: Extraction): string {
  return x.current === null ? '' : ` (at entry ${quote(x.current)})`;
}

async function extractGz(x: Extraction, archivePath: string): Promise<void> {
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

async function extractTar(x: Extraction, archivePath: string, gzipped: boolean): Promise<void> {
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

// ---------------------------------------------------------------------------------------------------------
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

async function extractZip(x: Extraction, archivePath: string): Promise<void> {
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

// ---------------------------------------------------------------------------------------------------------

const EXTRACTORS: Record<ArchiveKind, (x: Extraction, archivePath: string) => Promise<void>> = {
  zip: extractZip,
  tar: (x, archivePath) => extractTar(x, archivePath, false),
  'tar.gz': (x, archivePath) => extractTar(x, archivePath, true),
  gz: extractGz,
};

/** yauzl refuses unsafe names itself, as errors of the form '<problem>: <name>'. */
const YAUZL_NAME_ERRORS: [RegExp, string][] = [
  [/^absolute path: (.*)$/s, 'has an absolute path'],
  [/^invalid relative path: (.*)$/s, 'escapes the archive'],
  [/^invalid characters in fileName: (.*)$/s, 'has invalid characters in its name'],
];

/**
 * Turns a library's error into the refusal it means. I/O errors (full disk, missing archive) are not the
 * archive's fault and pass through unchanged.
 */
function explain(x: Extraction, err: unknown): Error {
  const error = toError(err);
  if (error instanceof ArchiveRefusedError || err === x.callerError) return error;
  if ('syscall' in error && typeof error.syscall === 'string') return error;
  for (const [pattern, problem] of YAUZL_NAME_ERRORS) {
    const match = pattern.exec(error.message);
    if (match) return x.refuse(`entry ${quote(match[1])} ${problem}`);
  }
  return x.corrupt(error.message);
}

function toError(err: unknown): Error {
  // Node's own errors (zlib, fs) fail `instanceof Error` when this code runs in another realm (jest's vm).
  if (err instanceof Error || types.isNativeError(err)) return err;
  return new Error(String(err));
}

/** Names come from the archive: keep messages one printable line of bounded length. */
function quote(name: string): string {
  const printable = Array.from(name, (c) => {
    const code = c.charCodeAt(0);
    return code < 0x20 || code === 0x7f ? `\\x${code.toString(16).padStart(2, '0')}` : c;
  }).join('');
  return `'${printable.length > 200 ? `${printable.slice(0, 200)}…` : printable}'`;
}

function size(bytes: number): string {
  for (const [unit, factor] of [
    ['GiB', GiB],
    ['MiB', MiB],
    ['KiB', KiB],
  ] as const) {
    if (bytes >= factor && bytes % factor === 0) return `${bytes / factor} ${unit}`;
  }
  return `${bytes} bytes`;
}

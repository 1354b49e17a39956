import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { randomBytes } from 'crypto';
import * as zlib from 'zlib';
import { pack } from 'tar-stream';
import {
  ArchiveRefusedError,
  DEFAULT_LIMITS,
  ExtractLimits,
  ExtractResult,
  archiveKind,
  extractArchive,
} from './index';

// ---------------------------------------------------------------------------------------------------------
// Archive builders: every archive is made here at run time, so no binary fixtures are committed.

interface ZipSpec {
  name: string;
  data?: Buffer | string;
  /** 0 = STORE, 8 = DEFLATE (default). */
  method?: 0 | 8;
  /** Unix mode (type and permission bits) for the high half of the external attributes. */
  mode?: number;
  /** Lie about the uncompressed size (in both headers). */
  declaredSize?: number;
  crc?: number;
  /** Write no data of its own: the central record points at the local record of entry `shareWith`. */
  shareWith?: number;
}

function bytes(data: Buffer | string | undefined): Buffer {
  return Buffer.isBuffer(data) ? data : Buffer.from(data ?? '');
}

function zipRecord(spec: ZipSpec, body: Buffer, offset: number): { local: Buffer; central: Buffer } {
  const data = bytes(spec.data);
  const method = spec.method ?? 8;
  const name = Buffer.from(spec.name, 'utf8');
  const crc = spec.crc ?? zlib.crc32(data);
  const size = spec.declaredSize ?? data.length;
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  local.writeUInt16LE(0x0800, 6); // UTF-8 names
  local.writeUInt16LE(method, 8);
  local.writeUInt32LE(crc, 14);
  local.writeUInt32LE(body.length, 18);
  local.writeUInt32LE(size, 22);
  local.writeUInt16LE(name.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE((3 << 8) | 20, 4); // made by Unix
  central.writeUInt16LE(20, 6);
  central.writeUInt16LE(0x0800, 8);
  central.writeUInt16LE(method, 10);
  central.writeUInt32LE(crc, 16);
  central.writeUInt32LE(body.length, 20);
  central.writeUInt32LE(size, 24);
  central.writeUInt16LE(name.length, 28);
  const mode = spec.mode ?? (spec.name.endsWith('/') ? 0o040755 : 0o100644);
  central.writeUInt32LE((mode << 16) >>> 0, 38);
  central.writeUInt32LE(offset, 42);
  return { local: Buffer.concat([local, name, body]), central: Buffer.concat([central, name]) };
}

/** A zip with local headers, data, central directory and end record, written by hand. */
function zip(specs: ZipSpec[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  const offsets: number[] = [];
  const bodies: Buffer[] = [];
  let offset = 0;
  for (const spec of specs) {
    const data = bytes(spec.data);
    const shared = spec.shareWith;
    const body = shared !== undefined ? bodies[shared] : spec.method === 0 ? data : zlib.deflateRawSync(data);
    const at = shared !== undefined ? offsets[shared] : offset;
    const record = zipRecord(spec, body, at);
    offsets.push(at);
    bodies.push(body);
    centrals.push(record.central);
    if (shared === undefined) {
      locals.push(record.local);
      offset += record.local.length;
    }
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(specs.length, 8);
  end.writeUInt16LE(specs.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}

interface TarSpec {
  name: string;
  data?: Buffer | string;
  type?: 'file' | 'directory' | 'symlink' | 'link' | 'character-device' | 'fifo';
  linkname?: string;
}

async function tar(specs: TarSpec[]): Promise<Buffer> {
  const p = pack();
  for (const spec of specs) {
    const type = spec.type ?? 'file';
    if (type === 'file') p.entry({ name: spec.name }, bytes(spec.data));
    else p.entry({ name: spec.name, type, linkname: spec.linkname });
  }
  p.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of p) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function tgz(specs: TarSpec[]): Promise<Buffer> {
  return zlib.gzipSync(await tar(specs));
}

// ---------------------------------------------------------------------------------------------------------
// Running extractions in fresh temp dirs.

let root: string;
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown): void => void unhandled.push(reason);

beforeAll(() => {
  root = fs.mkdtempSync(os.tmpdir() + '/archives-spec-');
  process.on('unhandledRejection', onUnhandled);
});

afterAll(() => {
  process.off('unhandledRejection', onUnhandled);
  fs.rmSync(root, { recursive: true, force: true });
});

const accept = (name: string): boolean => /\.(csv|json|txt)$/i.test(name);

interface Run {
  outDir: string;
  result: ExtractResult;
}

async function extract(archiveName: string, content: Buffer, limits?: Partial<ExtractLimits>): Promise<Run> {
  const dir = fs.mkdtempSync(path.join(root, 'case-'));
  const archivePath = path.join(dir, 'upload');
  fs.writeFileSync(archivePath, content);
  const outDir = path.join(dir, 'out');
  fs.mkdirSync(outDir);
  const kind = archiveKind(archiveName);
  if (kind === null) throw new Error(`not an archive name: ${archiveName}`);
  try {
    const result = await extractArchive(archivePath, kind, outDir, { limits, accept, archiveName });
    return { outDir, result };
  } catch (err) {
    // Every refusal must leave the output directory as it found it.
    expect(fs.readdirSync(outDir)).toEqual([]);
    throw err;
  }
}

/** The refusal's message; fails unless the archive is refused with an ArchiveRefusedError. */
async function refusal(
  archiveName: string,
  content: Buffer,
  limits?: Partial<ExtractLimits>,
): Promise<string> {
  const error = await extract(archiveName, content, limits).then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(ArchiveRefusedError);
  return (error as Error).message;
}

function contents(run: Run): Record<string, string> {
  return Object.fromEntries(run.result.files.map((f) => [f.name, fs.readFileSync(f.path, 'utf8')]));
}

function openFds(): number {
  return fs.readdirSync('/proc/self/fd').length;
}

// ---------------------------------------------------------------------------------------------------------

describe('archiveKind', () => {
  it.each([
    ['a.zip', 'zip'],
    ['A.JAR', 'zip'],
    ['x.tar', 'tar'],
    ['x.tar.gz', 'tar.gz'],
    ['X.TGZ', 'tar.gz'],
    ['data.csv.gz', 'gz'],
    ['data.csv', null],
    ['zip', null],
    ['a.tar.bz2', null],
  ])('%s → %s', (name, kind) => {
    expect(archiveKind(name)).toBe(kind);
  });
});

describe('DEFAULT_LIMITS', () => {
  it('has the documented values', () => {
    expect(DEFAULT_LIMITS).toEqual({
      maxEntries: 10_000,
      maxTotalBytes: 10 * 1024 ** 3,
      maxRatio: 200,
      maxEntryBytes: 5 * 1024 ** 3,
    });
  });
});

describe('extractArchive: happy paths', () => {
  const big = randomBytes(300 * 1024).toString('base64');

  const zipSpecs: ZipSpec[] = [
    { name: 'data/' },
    { name: 'data/a.csv', data: 'id,name\n1,x\n' },
    { name: 'data/b.json', data: '{"a":1}', method: 0 },
    { name: 'empty.txt', data: '', method: 0 },
    { name: 'big.csv', data: big },
    { name: 'tool.exe', data: 'MZ' },
    { name: '__MACOSX/data/._a.csv', data: 'meta' },
    { name: 'data/._b.csv', data: 'meta' },
  ];

  it.each(['upload.zip', 'lib.JAR'])('extracts %s', async (archiveName) => {
    const run = await extract(archiveName, zip(zipSpecs));
    expect(run.result.files).toEqual([
      { name: 'data/a.csv', path: path.join(run.outDir, '000001'), bytes: 12 },
      { name: 'data/b.json', path: path.join(run.outDir, '000002'), bytes: 7 },
      { name: 'empty.txt', path: path.join(run.outDir, '000003'), bytes: 0 },
      { name: 'big.csv', path: path.join(run.outDir, '000004'), bytes: big.length },
    ]);
    expect(contents(run)).toEqual({
      'data/a.csv': 'id,name\n1,x\n',
      'data/b.json': '{"a":1}',
      'empty.txt': '',
      'big.csv': big,
    });
    expect(run.result.skipped).toEqual([
      { name: 'tool.exe', reason: 'unsupported file type' },
      { name: '__MACOSX/data/._a.csv', reason: 'metadata' },
      { name: 'data/._b.csv', reason: 'metadata' },
    ]);
    expect(fs.readdirSync(run.outDir)).toEqual(['000001', '000002', '000003', '000004']);
  });

  const tarSpecs: TarSpec[] = [
    { name: 'data', type: 'directory' },
    { name: './data/a.csv', data: 'id,name\n1,x\n' },
    { name: 'data//b.json', data: '{"a":1}' },
    { name: 'big.csv', data: big },
    { name: 'tool.exe', data: 'MZ' },
    { name: '__MACOSX/._big.csv', data: 'meta' },
  ];

  it.each([
    ['upload.tar', tar],
    ['upload.tar.gz', tgz],
    ['upload.TGZ', tgz],
  ])('extracts %s', async (archiveName, build) => {
    const run = await extract(archiveName, await build(tarSpecs));
    expect(run.result.files).toEqual([
      { name: 'data/a.csv', path: path.join(run.outDir, '000001'), bytes: 12 },
      { name: 'data/b.json', path: path.join(run.outDir, '000002'), bytes: 7 },
      { name: 'big.csv', path: path.join(run.outDir, '000003'), bytes: big.length },
    ]);
    expect(contents(run)).toEqual({
      'data/a.csv': 'id,name\n1,x\n',
      'data/b.json': '{"a":1}',
      'big.csv': big,
    });
    expect(run.result.skipped).toEqual([
      { name: 'tool.exe', reason: 'unsupported file type' },
      { name: '__MACOSX/._big.csv', reason: 'metadata' },
    ]);
  });

  it('extracts a single gzip file under the archive name without .gz', async () => {
    const run = await extract('sales.CSV.GZ', zlib.gzipSync(big));
    expect(run.result).toEqual({
      files: [{ name: 'sales.CSV', path: path.join(run.outDir, '000001'), bytes: big.length }],
      skipped: [],
    });
    expect(contents(run)).toEqual({ 'sales.CSV': big });
  });

  it('skips a gzip file of an unsupported type without writing anything', async () => {
    const run = await extract('tool.exe.gz', zlib.gzipSync('MZ'));
    expect(run.result).toEqual({
      files: [],
      skipped: [{ name: 'tool.exe', reason: 'unsupported file type' }],
    });
    expect(fs.readdirSync(run.outDir)).toEqual([]);
  });
});

describe('extractArchive: unsafe entries', () => {
  const good = { name: 'ok.csv', data: 'a\n' };

  it.each([
    ['../x.csv', "entry '../x.csv' escapes the archive"],
    ['a/../../x.csv', "entry 'a/../../x.csv' escapes the archive"],
    ['/etc/x.csv', "entry '/etc/x.csv' has an absolute path"],
    // yauzl turns backslashes into slashes before it validates the name
    ['C:\\x.csv', "entry 'C:/x.csv' has an absolute path"],
    ['\\\\server\\x.csv', "entry '//server/x.csv' has an absolute path"],
    ['a\\..\\..\\x.csv', "entry 'a/../../x.csv' escapes the archive"],
    ['a\0.csv', "entry 'a\\x00.csv' has a NUL character in its name"],
  ])('refuses the zip entry %j', async (name, problem) => {
    const message = await refusal('bad.zip', zip([good, { name, data: 'x' }]));
    expect(message).toBe(`archive 'bad.zip' refused: ${problem}`);
  });

  it.each([
    ['../x.csv', "entry '../x.csv' escapes the archive"],
    ['a/../../x.csv', "entry 'a/../../x.csv' escapes the archive"],
    ['/etc/x.csv', "entry '/etc/x.csv' has an absolute path"],
    ['C:\\x.csv', "entry 'C:\\x.csv' has an absolute path"],
    ['\\\\server\\x.csv', "entry '\\\\server\\x.csv' has an absolute path"],
    ['a\\..\\..\\x.csv', "entry 'a\\..\\..\\x.csv' escapes the archive"],
    ['../', "entry '../' escapes the archive"],
  ])('refuses the tar entry %j', async (name, problem) => {
    const message = await refusal('bad.tar', await tar([good, { name, data: 'x' }]));
    expect(message).toBe(`archive 'bad.tar' refused: ${problem}`);
  });

  it('refuses a zip symlink', async () => {
    const archive = zip([good, { name: 'link.csv', data: '/etc/passwd', mode: 0o120777 }]);
    expect(await refusal('bad.zip', archive)).toBe(
      "archive 'bad.zip' refused: entry 'link.csv' is a symbolic link",
    );
  });

  it.each([
    ['symlink', 'is a symbolic link'],
    ['link', 'is a hard link'],
    ['character-device', 'is a device file'],
    ['fifo', 'is a FIFO'],
  ] as const)('refuses a tar %s', async (type, problem) => {
    const archive = await tgz([good, { name: 'x.csv', type, linkname: 'ok.csv' }]);
    expect(await refusal('bad.tgz', archive)).toBe(`archive 'bad.tgz' refused: entry 'x.csv' ${problem}`);
  });

  it('refuses a zip inside a zip', async () => {
    const archive = zip([good, { name: 'sub/inner.zip', data: zip([good]) }]);
    expect(await refusal('outer.zip', archive)).toBe(
      "archive 'outer.zip' refused: entry 'sub/inner.zip' is itself an archive, and archives inside archives are not extracted",
    );
  });

  it('refuses a tar.gz inside a tar', async () => {
    const archive = await tar([good, { name: 'inner.tar.gz', data: await tgz([good]) }]);
    expect(await refusal('outer.tar', archive)).toBe(
      "archive 'outer.tar' refused: entry 'inner.tar.gz' is itself an archive, and archives inside archives are not extracted",
    );
  });

  it('refuses a gzip whose content is itself an archive', async () => {
    expect(await refusal('inner.zip.gz', zlib.gzipSync(zip([good])))).toBe(
      "archive 'inner.zip.gz' refused: entry 'inner.zip' is itself an archive, and archives inside archives are not extracted",
    );
  });

  it('refuses zip entries that share their data (overlapping zip bomb)', async () => {
    const data = randomBytes(4096);
    const archive = zip([
      { name: 'a.csv', data, method: 0 },
      { name: 'b.csv', data, method: 0, shareWith: 0 },
    ]);
    expect(await refusal('bomb.zip', archive)).toBe(
      "archive 'bomb.zip' refused: entry 'b.csv' overlaps other entries",
    );
  });
});

describe('extractArchive: bombs and limits', () => {
  it('refuses a gzip bomb on the bytes actually decompressed', async () => {
    const bomb = zlib.gzipSync(Buffer.alloc(64 * 1024 * 1024));
    expect(bomb.length).toBeLessThan(128 * 1024);
    // No wall-clock bound here (a loaded CI machine made one flaky): the ratio named is what was measured.
    expect(await refusal('zeros.csv.gz', bomb, { maxRatio: 100 })).toBe(
      "archive 'zeros.csv.gz' refused: the archive expands more than 100 times its size (at entry 'zeros.csv')",
    );
  });

  it('refuses a tar.gz bomb even when its content would be skipped', async () => {
    const bomb = await tgz([{ name: 'zeros.bin', data: Buffer.alloc(32 * 1024 * 1024) }]);
    expect(await refusal('zeros.tar.gz', bomb, { maxRatio: 100 })).toBe(
      "archive 'zeros.tar.gz' refused: the archive expands more than 100 times its size (at entry 'zeros.bin')",
    );
  });

  it('refuses a zip entry whose declared ratio passes the limit', async () => {
    const archive = zip([{ name: 'zeros.csv', data: Buffer.alloc(16 * 1024 * 1024) }]);
    expect(await refusal('zeros.zip', archive, { maxRatio: 100 })).toBe(
      "archive 'zeros.zip' refused: entry 'zeros.csv' expands more than 100 times its compressed size",
    );
  });

  it('refuses a zip entry that inflates beyond its declared size', async () => {
    const archive = zip([
      { name: 'ok.csv', data: 'a\n' },
      { name: 'x.csv', data: Buffer.alloc(1024 * 1024, 'a'), declaredSize: 10 },
    ]);
    const message = await refusal('liar.zip', archive);
    expect(message).toMatch(
      /^archive 'liar\.zip' refused: the archive is corrupt at entry 'x\.csv' \(too many bytes/,
    );
  });

  it('refuses a stored zip entry whose bytes do not match its CRC', async () => {
    const archive = zip([{ name: 'x.csv', data: 'hello', method: 0, crc: 1234 }]);
    expect(await refusal('crc.zip', archive)).toBe(
      "archive 'crc.zip' refused: the archive is corrupt at entry 'x.csv' (CRC mismatch)",
    );
  });

  it('refuses more than maxEntries entries, counting directories and skipped ones (tar)', async () => {
    const specs: TarSpec[] = [{ name: 'd', type: 'directory' }, { name: 'x.exe' }];
    for (let i = 0; i < 99; i++) specs.push({ name: `d/${i}.csv`, data: 'a' });
    expect(await refusal('many.tar', await tar(specs), { maxEntries: 100 })).toBe(
      "archive 'many.tar' refused: it has more than 100 entries",
    );
    const run = await extract('many.tar', await tar(specs.slice(1)), { maxEntries: 100 });
    expect(run.result.files).toHaveLength(99);
  });

  it('refuses more than maxEntries entries from the zip central directory', async () => {
    const specs: ZipSpec[] = Array.from({ length: 101 }, (_, i) => ({ name: `${i}.csv`, data: 'a' }));
    expect(await refusal('many.zip', zip(specs), { maxEntries: 100 })).toBe(
      "archive 'many.zip' refused: it has more than 100 entries",
    );
  });

  it('refuses 10,001 entries with the default limits', async () => {
    const specs: TarSpec[] = Array.from({ length: 10_001 }, (_, i) => ({ name: `${i}.exe` }));
    const archive = await tgz(specs);
    // No wall-clock bound (CI under load took 5.3 s against a 5 s one): the refusal names the entry count,
    // and jest's timeout bounds the run.
    expect(await refusal('many.tgz', archive)).toBe(
      "archive 'many.tgz' refused: it has more than 10000 entries",
    );
  });

  it('refuses when the total extracted size passes maxTotalBytes', async () => {
    const specs = ['a', 'b', 'c'].map((n) => ({ name: `${n}.csv`, data: Buffer.alloc(400, n) }));
    expect(await refusal('total.tar', await tar(specs), { maxTotalBytes: 1000 })).toBe(
      "archive 'total.tar' refused: entry 'c.csv' takes the extracted total past the limit of 1000 bytes",
    );
    expect(await refusal('total.zip', zip(specs), { maxTotalBytes: 1000 })).toBe(
      "archive 'total.zip' refused: entry 'c.csv' takes the extracted total past the limit of 1000 bytes",
    );
  });

  it('refuses an entry larger than maxEntryBytes', async () => {
    const specs = [
      { name: 'small.csv', data: 'a\n' },
      { name: 'big.csv', data: Buffer.alloc(2048, 'x') },
    ];
    const limits = { maxEntryBytes: 1024 };
    const problem = "entry 'big.csv' is larger than the limit of 1 KiB";
    expect(await refusal('big.tar', await tar(specs), limits)).toBe(`archive 'big.tar' refused: ${problem}`);
    expect(await refusal('big.zip', zip(specs), limits)).toBe(`archive 'big.zip' refused: ${problem}`);
    expect(await refusal('big.csv.gz', zlib.gzipSync(Buffer.alloc(2048)), limits)).toBe(
      `archive 'big.csv.gz' refused: ${problem}`,
    );
  });

  it('accepts an entry of exactly maxEntryBytes', async () => {
    const run = await extract('edge.tar', await tar([{ name: 'e.csv', data: Buffer.alloc(1024) }]), {
      maxEntryBytes: 1024,
    });
    expect(run.result.files.map((f) => f.bytes)).toEqual([1024]);
  });

  it('passes an error thrown by accept through unchanged, and removes what it wrote', async () => {
    const dir = fs.mkdtempSync(path.join(root, 'accept-'));
    const archivePath = path.join(dir, 'a.tar');
    fs.writeFileSync(
      archivePath,
      await tar([
        { name: 'a.csv', data: 'a' },
        { name: 'b.csv', data: 'b' },
      ]),
    );
    const outDir = path.join(dir, 'out');
    fs.mkdirSync(outDir);
    const boom = new Error('boom');
    const picky = (name: string): boolean => {
      if (name === 'b.csv') throw boom;
      return true;
    };
    await expect(
      extractArchive(archivePath, 'tar', outDir, { accept: picky, archiveName: 'a.tar' }),
    ).rejects.toBe(boom);
    expect(fs.readdirSync(outDir)).toEqual([]);
  });

  it('never replaces or removes a file it did not create', async () => {
    const dir = fs.mkdtempSync(path.join(root, 'busy-'));
    const archivePath = path.join(dir, 'a.tar');
    fs.writeFileSync(archivePath, await tar([{ name: 'a.csv', data: 'a' }]));
    fs.writeFileSync(path.join(dir, '000001'), 'precious');
    const error = await extractArchive(archivePath, 'tar', dir, { accept, archiveName: 'a.tar' }).catch(
      (err: unknown) => err,
    );
    expect(error).toMatchObject({ code: 'EEXIST' });
    expect(fs.readFileSync(path.join(dir, '000001'), 'utf8')).toBe('precious');
  });

  it('rejects a limit that would silently disable a check', async () => {
    await expect(
      extractArchive('/nonexistent', 'tar', root, {
        limits: { maxRatio: NaN },
        accept,
        archiveName: 'x.tar',
      }),
    ).rejects.toThrow(RangeError);
  });
});

describe('extractArchive: corrupt archives', () => {
  it('refuses random bytes as a zip', async () => {
    expect(await refusal('junk.zip', randomBytes(4096))).toMatch(
      /^archive 'junk\.zip' refused: the archive is corrupt \(End of central directory record signature not found\. Either not a zip file, or file is truncated\.\)$/,
    );
  });

  it('refuses a zip cut short', async () => {
    const archive = zip([{ name: 'a.csv', data: randomBytes(8192) }]);
    expect(await refusal('cut.zip', archive.subarray(0, archive.length - 30))).toMatch(
      /^archive 'cut\.zip' refused: the archive is corrupt \(/,
    );
  });

  it('refuses a truncated tar.gz', async () => {
    const archive = await tgz([
      { name: 'a.csv', data: 'a\n' },
      { name: 'b.csv', data: randomBytes(64 * 1024) },
    ]);
    // Whether the tar parser saw b.csv's header before gunzip failed depends on stream timing.
    expect(await refusal('cut.tar.gz', archive.subarray(0, archive.length / 2))).toMatch(
      /^archive 'cut\.tar\.gz' refused: the archive is corrupt( at entry 'b\.csv')? \(unexpected end of file\)$/,
    );
  });

  it('refuses a truncated tar', async () => {
    const archive = await tar([{ name: 'a.csv', data: randomBytes(4096) }]);
    expect(await refusal('cut.tar', archive.subarray(0, 2048))).toBe(
      "archive 'cut.tar' refused: the archive is corrupt at entry 'a.csv' (Unexpected end of data)",
    );
  });

  it('refuses random bytes as a tar', async () => {
    expect(await refusal('junk.tar', randomBytes(4096))).toMatch(
      /^archive 'junk\.tar' refused: the archive is corrupt \(Invalid tar header/,
    );
  });

  it('refuses random bytes as a gzip', async () => {
    expect(await refusal('junk.csv.gz', randomBytes(4096))).toBe(
      "archive 'junk.csv.gz' refused: the archive is corrupt at entry 'junk.csv' (incorrect header check)",
    );
  });

  it('refuses a gzip whose CRC does not match', async () => {
    const archive = zlib.gzipSync('hello, world\n');
    archive.writeUInt32LE((archive.readUInt32LE(archive.length - 8) ^ 1) >>> 0, archive.length - 8);
    expect(await refusal('crc.csv.gz', archive)).toBe(
      "archive 'crc.csv.gz' refused: the archive is corrupt at entry 'crc.csv' (incorrect data check)",
    );
  });
});

describe('extractArchive: resources', () => {
  it('leaves no file handles open after refusals and successes', async () => {
    const cases: [string, Buffer][] = [
      [
        'a.zip',
        zip([
          { name: 'a.csv', data: 'a' },
          { name: '../x.csv', data: 'x' },
        ]),
      ],
      [
        'b.zip',
        zip([
          { name: 'a.csv', data: 'a' },
          { name: 'x.csv', data: Buffer.alloc(65536), declaredSize: 1 },
        ]),
      ],
      ['c.zip', zip([{ name: 'a.csv', data: 'a' }])],
      [
        'd.tgz',
        await tgz([
          { name: 'a.csv', data: 'a' },
          { name: 'l', type: 'symlink', linkname: 'a.csv' },
        ]),
      ],
      ['e.tgz', (await tgz([{ name: 'a.csv', data: randomBytes(65536) }])).subarray(0, 30000)],
      ['f.tar', await tar([{ name: 'a.csv', data: Buffer.alloc(4096) }])],
      ['g.csv.gz', zlib.gzipSync(Buffer.alloc(8 * 1024 * 1024))],
      ['h.zip', randomBytes(100)],
    ];
    const before = openFds();
    for (const [name, content] of cases) {
      await extract(name, content, { maxRatio: 100, maxEntryBytes: 2048 }).catch((err: unknown) => {
        expect(err).toBeInstanceOf(ArchiveRefusedError);
      });
    }
    // yauzl closes the file of a zip it could not open on its own, a moment after reporting the error.
    for (let i = 0; i < 50 && openFds() !== before; i++) await new Promise((r) => setTimeout(r, 10));
    expect(openFds()).toBe(before);
  });

  it('saw no unhandled rejections', async () => {
    await new Promise((resolve) => setImmediate(resolve));
    expect(unhandled).toEqual([]);
  });
});

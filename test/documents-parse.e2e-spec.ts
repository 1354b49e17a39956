import fc from 'fast-check';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DocumentError, extractText } from '@tapyard/documents';
import { PDF_EVASIONS, parseMeasured, writeDocxBomb, writePdfBomb } from './support/document-bombs';
import { propertyRuns } from './support/property-runs';

const CORPUS = join(__dirname, 'corpora', 'documents');

describe('document parsing (real parsers in a bounded process)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'tapyard-parse-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  const file = async (name: string, content: string | Buffer): Promise<string> => {
    const path = join(dir, name);
    await writeFile(path, content);
    return path;
  };
  const parse = async (name: string, content: string | Buffer) =>
    extractText({ path: await file(name, content), filename: name });
  const refusal = async (p: Promise<unknown>): Promise<DocumentError> => {
    const err = await p.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DocumentError);
    return err as DocumentError;
  };

  it('reads a PDF: text of every page, its title and page count', async () => {
    const r = await extractText({ path: join(CORPUS, 'travel-policy.pdf'), filename: 'travel-policy.pdf' });
    expect(r).toMatchObject({ format: 'pdf', pages: 2, title: 'Travel policy' });
    expect(r.text).toMatch(/Book trains for trips under four hours/);
    expect(r.text).toMatch(/Submit expense claims within thirty days/);
  });

  it('reads a PDF named .txt as a PDF', async () => {
    const r = await parse('misnamed.txt', await readFile(join(CORPUS, 'travel-policy.pdf')));
    expect(r.format).toBe('pdf');
  });

  it('reads a DOCX with its headings as Markdown headings', async () => {
    const r = await extractText({ path: join(CORPUS, 'onboarding.docx'), filename: 'onboarding.docx' });
    expect(r.format).toBe('docx');
    expect(r.text).toMatch(/^# Onboarding guide$/m);
    expect(r.text).toMatch(/^## Equipment$/m);
    expect(r.text).toMatch(/laptop and a badge/);
  });

  it('reads HTML without scripts, styles or navigation, headings kept', async () => {
    const r = await parse(
      'page.html',
      '<html><head><title>Parking</title><style>p{color:red}</style><script>alert(1)</script></head><body>' +
        '<nav>Home | About</nav><h1>Parking</h1><p>Staff park on level <b>minus two</b>.</p><h2>Bikes</h2><p>Racks by the door.</p></body></html>',
    );
    expect(r).toMatchObject({ format: 'html', title: 'Parking' });
    expect(r.text).toBe('# Parking\n\nStaff park on level minus two.\n\n## Bikes\n\nRacks by the door.');
  });

  it('reads Markdown and text, UTF-16 with a BOM too', async () => {
    expect((await parse('a.md', '# Title\n\nBody   text.\r\n\r\n\r\nMore.')).text).toBe(
      '# Title\n\nBody text.\n\nMore.',
    );
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('Grüße aus Köln', 'utf16le')]);
    expect((await parse('b.txt', utf16)).text).toBe('Grüße aus Köln');
  });

  it('refuses an encrypted PDF, a text-less PDF, a corrupt DOCX, binary data and non-UTF-8 text, each saying why', async () => {
    expect(
      (await refusal(extractText({ path: join(CORPUS, 'encrypted.pdf'), filename: 'encrypted.pdf' })))
        .message,
    ).toMatch(/is encrypted/);
    expect(
      (await refusal(extractText({ path: join(CORPUS, 'scanned.pdf'), filename: 'scanned.pdf' }))).message,
    ).toMatch(/no extractable text \(scanned\? OCR is not supported\)/);
    expect(
      (await refusal(extractText({ path: join(CORPUS, 'corrupt.docx'), filename: 'corrupt.docx' }))).message,
    ).toMatch(/not a readable DOCX/);
    expect((await refusal(parse('data.txt', Buffer.from([0x41, 0x00, 0x01, 0x02, 0xff])))).message).toMatch(
      /binary data/,
    );
    expect(
      (await refusal(parse('latin1.txt', Buffer.from('caf\u00e9 cr\u00e8me', 'latin1')))).message,
    ).toMatch(/not UTF-8 text \(invalid byte sequence at offset 3\)/);
  });

  it('ends a document with no text as a warning', async () => {
    const err = await refusal(parse('blank.html', '<html><body><script>x()</script>   </body></html>'));
    expect(err.severity).toBe('warning');
    expect(err.message).toMatch(/contains no text/);
  });

  it('reads a 10 MB single line of text whole', async () => {
    const line = 'lorem ipsum dolor sit amet '.repeat(Math.ceil((10 * 1024 * 1024) / 27));
    const r = await parse('long.txt', line);
    expect(r.text.length).toBe(line.trim().length);
  });

  it('stops a parse that takes too long or needs too much memory, and keeps serving', async () => {
    // HTML goes through the parse process (small plain text is decoded in process).
    const big = await file('big.html', `<html><body><p>${'word '.repeat(2_000_000)}</p></body></html>`);
    const slow = await refusal(
      extractText({ path: big, filename: 'big.html' }, {}, { maxBytes: 1e9, timeoutMs: 1, heapMb: 512 }),
    );
    expect(slow.message).toMatch(/took longer than/);
    const tooBig = await refusal(
      extractText({ path: big, filename: 'big.html' }, {}, { maxBytes: 1000, timeoutMs: 60000, heapMb: 512 }),
    );
    expect(tooBig.message).toMatch(/more than the 1000 a document may have/);
    const heap = await refusal(extractText({ path: big, filename: 'big.html' }, {}, { heapMb: 32 }));
    expect(heap.message).toBe(`'big.html' needs more than 32 MB of heap to parse`);
    expect((await parse('ok.txt', 'still serving')).text).toBe('still serving');
  });

  it('parses text and Markdown past 1 MiB under the same caps as the other formats', async () => {
    const big = await file('big.md', `# Big\n\n${'word '.repeat(1_000_000)}`);
    const heap = await refusal(extractText({ path: big, filename: 'big.md' }, {}, { heapMb: 32 }));
    expect(heap.message).toBe(`'big.md' needs more than 32 MB of heap to parse`);
    const slow = await refusal(extractText({ path: big, filename: 'big.md' }, {}, { timeoutMs: 1 }));
    expect(slow.message).toMatch(/took longer than/);
    expect((await extractText({ path: big, filename: 'big.md' })).title).toBe('Big');
  });

  it('ends with text or a DocumentError on mutated PDFs and DOCX files (fuzz, bounded)', async () => {
    const seeds = await Promise.all(
      ['travel-policy.pdf', 'onboarding.docx'].map((f) => readFile(join(CORPUS, f))),
    );
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(0, 1),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 20 }),
        fc.nat(),
        async (which, flips, cut) => {
          const bytes = Buffer.from(seeds[which]);
          for (const [at, v] of flips) bytes[at % bytes.length] = v;
          const body = bytes.subarray(0, Math.max(8, bytes.length - (cut % 512)));
          const name = `fuzz-${n++}.${which === 0 ? 'pdf' : 'docx'}`;
          const r = await extractText(
            { path: await file(name, body), filename: name },
            {},
            { maxBytes: 1e7, timeoutMs: 20000, heapMb: 256 },
          ).then(
            (x) => x,
            (e: unknown) => e,
          );
          if (!(r instanceof DocumentError)) expect(typeof (r as { text: string }).text).toBe('string');
        },
      ),
      // Each case parses in a process of its own (~0.3 s of CPU): ten here, more under `npm run fuzz`.
      propertyRuns(10, 20261124),
    );
  });

  describe('decompression bombs (a process with its memory capped, the bytes inflated counted)', () => {
    const MiB = 1024 * 1024;
    // Far below the ~1.7 GB each bomb cost when parsed in a thread of the worker.
    const RSS_BOUND = 600 * MiB;

    it('refuses a DOCX whose document.xml inflates to 900 MB, within bounded memory, and frees it', async () => {
      const path = join(dir, 'bomb.docx');
      expect(await writeDocxBomb(path, 900 * MiB)).toBeLessThan(MiB);
      const r = await parseMeasured(path, 'bomb.docx');
      expect(r.error).toMatch(
        /^'bomb\.docx' is refused: its decompressed size exceeds the limit of 256 MiB \(at entry 'word\/document\.xml'\)$/,
      );
      expect(r.peakRssBytes).toBeLessThan(RSS_BOUND);
      expect(r.childrenLeft).toBe(0);
    });

    it('refuses a PDF whose Flate stream inflates to 800 MB, within bounded memory, and frees it', async () => {
      const path = join(dir, 'bomb.pdf');
      expect(await writePdfBomb(path, 800 * MiB)).toBeLessThan(MiB);
      const r = await parseMeasured(path, 'bomb.pdf');
      expect(r.error).toMatch(
        /^'bomb\.pdf' is refused: the decompressed size of the stream at byte \d+ exceeds 200 times/,
      );
      expect(r.peakRssBytes).toBeLessThan(RSS_BOUND);
      expect(r.childrenLeft).toBe(0);
    });

    it('counts the bytes actually inflated: a DOCX part that declares less than it holds is refused', async () => {
      const path = join(dir, 'lie.docx');
      await writeDocxBomb(path, 100 * MiB, true);
      const ratio = await refusal(extractText({ path, filename: 'lie.docx' }));
      expect(ratio.message).toMatch(
        /^'lie\.docx' is refused: the decompressed size of entry 'word\/document\.xml' exceeds 200 times its compressed size$/,
      );
      const total = await refusal(
        extractText({ path, filename: 'lie.docx' }, {}, { maxRatio: 10_000, maxDecompressedBytes: 50 * MiB }),
      );
      expect(total.message).toMatch(
        /its decompressed size exceeds the limit of 50 MiB \(at entry 'word\/document\.xml'\)/,
      );
    });

    it('refuses a PDF stream by the absolute bound too, and reads the same files when small', async () => {
      const path = join(dir, 'big-stream.pdf');
      await writePdfBomb(path, 60 * MiB);
      const err = await refusal(
        extractText(
          { path, filename: 'big-stream.pdf' },
          {},
          { maxRatio: 10_000, maxDecompressedBytes: 50 * MiB },
        ),
      );
      expect(err.message).toMatch(
        /^'big-stream\.pdf' is refused: the decompressed size of the stream at byte \d+ exceeds the limit of 50 MiB$/,
      );
      expect((await parse('small.pdf', await small(writePdfBomb))).text).toBe('bomb');
      expect((await parse('small.docx', await small(writeDocxBomb))).text).toBe('bomb');
    });

    it('bounds a PDF per stream: pages that decode to more in all than one stream may are read', async () => {
      const path = join(dir, 'long.pdf');
      await writePdfBomb(path, 30 * MiB, undefined, 3);
      const r = await extractText(
        { path, filename: 'long.pdf' },
        {},
        { maxRatio: 10_000, maxDecompressedBytes: 50 * MiB },
      );
      expect(r).toMatchObject({ pages: 3, text: 'bomb\n\nbomb\n\nbomb' });
    });

    it.each(PDF_EVASIONS)(
      'sees a PDF bomb hidden by %s, which pdf.js decodes all the same',
      async (evasion) => {
        const path = join(dir, `${evasion}.pdf`);
        await writePdfBomb(path, 1000, evasion);
        expect((await parse(`${evasion}-small.pdf`, await readFile(path))).text).toBe('bomb');
        await writePdfBomb(path, 100 * MiB, evasion);
        expect((await refusal(extractText({ path, filename: `${evasion}.pdf` }))).message).toMatch(
          /is refused: .*decompressed size .*exceeds/,
        );
      },
    );

    it('caps the memory of the parse process where the bounds do not reach (bounds lifted)', async () => {
      const path = join(dir, 'uncounted.pdf');
      await writePdfBomb(path, 800 * MiB);
      const r = await parseMeasured(path, 'uncounted.pdf', {
        maxRatio: 10_000,
        maxDecompressedBytes: 2048 * MiB,
        memoryBytes: 512 * MiB,
      });
      expect(r.error).toMatch(/^'uncounted\.pdf' needs more than 512 MB of memory to parse/);
      expect(r.peakRssBytes).toBeLessThan(RSS_BOUND);
      expect(r.childrenLeft).toBe(0);
    });

    const small = async (write: (path: string, spaces: number) => Promise<number>): Promise<Buffer> => {
      const path = join(dir, `small-${write.name}`);
      await write(path, 1000);
      return readFile(path);
    };
  });
});

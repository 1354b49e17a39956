import { readFile } from 'node:fs/promises';
import type { FormatCallback, HtmlToTextOptions } from 'html-to-text';
import type { ParserOptions } from '@tapyard/model';
import type { DocumentFormat, ExtractedText } from '../document.types';
import { DecompressionBounds, DecompressionBudget } from './decompression';
import { openDocx } from './docx-parts';
import { decodeText, normalizeText } from './normalize-text';
import { checkPdfStreams } from './pdf-streams';
import { Unreadable } from './unreadable';

/** Headings as Markdown heading lines, so the chunker's `heading` boundary sees them. */
const heading: FormatCallback = (elem, walk, builder, options) => {
  builder.openBlock({ leadingLineBreaks: 2 });
  builder.addLiteral(`${'#'.repeat(Number(options.level ?? 1))} `);
  walk(elem.children, builder);
  builder.closeBlock({ trailingLineBreaks: 2 });
};

function htmlOptions(ignoreLinks: boolean): HtmlToTextOptions {
  return {
    wordwrap: false,
    formatters: { mdHeading: heading },
    selectors: [
      ...[1, 2, 3, 4, 5, 6].map((level) => ({
        selector: `h${level}`,
        format: 'mdHeading',
        options: { level },
      })),
      { selector: 'a', options: { ignoreHref: ignoreLinks } },
      { selector: 'img', format: 'skip' },
      { selector: 'nav', format: 'skip' },
      { selector: 'script', format: 'skip' },
      { selector: 'style', format: 'skip' },
      { selector: 'noscript', format: 'skip' },
      { selector: 'table', format: 'dataTable' },
    ],
  };
}

export async function parseDocument(
  path: string,
  name: string,
  format: DocumentFormat,
  options: Required<ParserOptions>,
  bounds: DecompressionBounds,
): Promise<ExtractedText> {
  const warnings: string[] = [];
  let text: string;
  let title: string | undefined;
  let pages: number | undefined;
  switch (format) {
    case 'pdf': {
      const bytes = await readFile(path);
      await checkPdfStreams(bytes, name, bounds);
      // Each parser is loaded only for its format: pdf.js alone costs more than parsing a short file.
      const { getDocumentProxy, getMeta } = await import('unpdf');
      let pdf;
      try {
        pdf = await getDocumentProxy(new Uint8Array(bytes), { stopAtErrors: false, verbosity: 0 });
      } catch (err) {
        const e = err as { name?: string; message?: string };
        if (e.name === 'PasswordException')
          throw new Unreadable(`'${name}' is encrypted (password-protected PDF)`);
        throw new Unreadable(`'${name}' is not a readable PDF: ${e.message ?? String(err)}`);
      }
      pages = pdf.numPages;
      if (pages > options.maxPages) {
        warnings.push(`only the first ${options.maxPages} of ${pages} pages were read (parser.maxPages)`);
      }
      const meta = await getMeta(pdf).catch(() => null);
      const info = meta?.info as { Title?: unknown } | undefined;
      if (typeof info?.Title === 'string' && info.Title.trim()) title = info.Title.trim();
      const parts: string[] = [];
      for (let p = 1; p <= Math.min(pages, options.maxPages); p++) {
        const page = await pdf.getPage(p);
        const content = await page.getTextContent();
        let line = '';
        const lines: string[] = [];
        for (const item of content.items as { str?: string; hasEOL?: boolean }[]) {
          line += item.str ?? '';
          if (item.hasEOL) {
            lines.push(line);
            line = '';
          }
        }
        lines.push(line);
        // Blank-line gaps stay paragraph breaks; a page ends a paragraph.
        parts.push(lines.join('\n'));
      }
      await pdf.cleanup?.();
      text = parts.join('\n\n');
      if (!text.replace(/\s+/g, '')) {
        throw new Unreadable(`'${name}' has no extractable text (scanned? OCR is not supported)`);
      }
      break;
    }
    case 'docx': {
      const mammoth = (await import('mammoth')).default;
      let html: string;
      try {
        const file = await openDocx(path, name, new DecompressionBudget(name, bounds));
        try {
          // mammoth's `file` input (lib/unzip.js, untyped) takes parts from the caller, who owns the
          // unzipping and its bounds; images are never read, as the text drops them anyway.
          const input = { file } as unknown as Parameters<typeof mammoth.convertToHtml>[0];
          const skipImage = mammoth.images.imgElement(() => Promise.resolve({ src: '' }));
          html = (await mammoth.convertToHtml(input, { convertImage: skipImage })).value;
        } finally {
          file.close();
        }
      } catch (err) {
        if (err instanceof Unreadable) throw err;
        throw new Unreadable(
          `'${name}' is not a readable DOCX file: ${(err as Error).message.split('\n')[0]}`,
        );
      }
      text = (await import('html-to-text')).convert(html, htmlOptions(options.htmlIgnoreLinks));
      break;
    }
    case 'html': {
      const html = decodeOrRefuse(await readFile(path), name);
      const m = /<title[^>]*>([^<]{1,500})<\/title>/i.exec(html.slice(0, 65536));
      if (m?.[1].trim()) title = m[1].trim();
      text = (await import('html-to-text')).convert(html, htmlOptions(options.htmlIgnoreLinks));
      break;
    }
    case 'markdown':
    case 'text':
      text = decodeOrRefuse(await readFile(path), name);
      if (format === 'markdown') title = /^#{1,6} (.+)$/m.exec(text.slice(0, 65536))?.[1].trim();
      break;
  }
  if (text.length > options.maxChars) {
    warnings.push(`only the first ${options.maxChars} characters were read (parser.maxChars)`);
    text = text.slice(0, options.maxChars);
  }
  text = normalizeText(text);
  if (!text) throw new Unreadable(`'${name}' contains no text`, 'warning');
  return { format, text, ...(title ? { title } : {}), ...(pages !== undefined ? { pages } : {}), warnings };
}

function decodeOrRefuse(bytes: Uint8Array, name: string): string {
  try {
    return decodeText(bytes, name);
  } catch (err) {
    throw new Unreadable((err as Error).message);
  }
}

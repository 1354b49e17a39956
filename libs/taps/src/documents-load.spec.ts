import { documentBytes } from './documents-load';

describe('documentBytes', () => {
  it('decodes base64 content (standard, URL-safe, MIME line breaks)', () => {
    const pdf = Buffer.from('%PDF-1.7\n\u00ff\u00fe binary', 'latin1');
    expect(documentBytes(pdf.toString('base64'))).toEqual(pdf);
    expect(documentBytes(pdf.toString('base64url'))).toEqual(pdf);
    const mime = pdf.toString('base64').replace(/(.{8})/g, '$1\r\n');
    expect(documentBytes(mime)).toEqual(pdf);
  });

  it('takes text that is not base64 as the UTF-8 text of the document', () => {
    expect(documentBytes('Annual leave: 25 days.').toString('utf8')).toBe('Annual leave: 25 days.');
    expect(documentBytes('beta v2').toString('utf8')).toBe('beta v2');
    expect(documentBytes('# Título\n\nTexto').toString('utf8')).toBe('# Título\n\nTexto');
  });
});

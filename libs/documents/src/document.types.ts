/** Formats a document pipeline reads. */
export const DOCUMENT_FORMATS = ['pdf', 'docx', 'html', 'markdown', 'text'] as const;
export type DocumentFormat = (typeof DOCUMENT_FORMATS)[number];

/** What parsing a document gave: its text, with paragraphs separated by blank lines. */
export interface ExtractedText {
  format: DocumentFormat;
  text: string;
  /** Document title when the format carries one (PDF info, HTML <title>, first Markdown heading). */
  title?: string;
  /** PDF pages. */
  pages?: number;
  /** Things the caller should know that did not stop parsing (e.g. a page without text). */
  warnings: string[];
}

import type { DocumentFormat } from '../document.types';

/**
 * The format of a document: its first bytes decide for PDF and ZIP-based DOCX (a PDF named `.txt` is
 * still a PDF), the name for text formats.
 */
export function detectFormat(head: Uint8Array, filename: string): DocumentFormat | 'zip' {
  const ascii = Buffer.from(head.subarray(0, 1024)).toString('latin1');
  if (ascii.startsWith('%PDF-') || ascii.slice(0, 1024).includes('%PDF-')) return 'pdf';
  if (head[0] === 0x50 && head[1] === 0x4b && head[2] === 0x03 && head[3] === 0x04) {
    return /\.docx$/i.test(filename) || ascii.includes('word/') ? 'docx' : 'zip';
  }
  if (/\.(html?|xhtml)$/i.test(filename)) return 'html';
  if (/\.(md|markdown)$/i.test(filename)) return 'markdown';
  if (/^\s*(<!doctype html|<html[\s>])/i.test(ascii)) return 'html';
  return 'text';
}

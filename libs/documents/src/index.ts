export { CHUNK_BOUNDARIES, chunkText } from './chunk/chunk-text';
export type { ChunkBoundary, ChunkingOptions, TextChunk } from './chunk/chunk-text';
export { DOCUMENT_FORMATS } from './document.types';
export type { DocumentFormat, ExtractedText } from './document.types';
export { DocumentLoader } from './load/document-loader';
export { DocumentsModule } from './documents.module';
export { extractText, PARSE_LIMITS } from './parse/extract-text';
export type { ParseLimits } from './parse/extract-text';
export { DocumentError } from './document.errors';

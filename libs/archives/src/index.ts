export { extractArchive } from './extract';
export type { ExtractOptions } from './extract';
export { ArchiveRefusedError } from './extraction';
export type { ExtractedFile, ExtractResult, SkippedEntry } from './extraction';
export { archiveKind } from './kinds';
export type { ArchiveKind } from './kinds';
export { DEFAULT_LIMITS } from './limits';
export type { ExtractLimits } from './limits';

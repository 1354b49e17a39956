import type { MetadataFilter } from '../vector-store';

type Scalar = string | number | boolean;
export type ChromaWhere = Record<string, { $eq: Scalar } | { $in: Scalar[] }> | { $and: ChromaWhere[] };

/** Chroma's `where`: `$eq` or `$in` per key, `$and` across keys (one key stands alone). */
export function chromaWhere(filter: MetadataFilter | undefined): ChromaWhere | undefined {
  const parts: ChromaWhere[] = Object.entries(filter ?? {}).map(([k, v]) => ({
    [k]: Array.isArray(v) ? { $in: v } : { $eq: v },
  }));
  if (parts.length === 0) return undefined;
  return parts.length === 1 ? parts[0] : { $and: parts };
}

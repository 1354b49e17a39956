import type { MetadataFilter, MetadataValue } from '../vector-store';

/** A Qdrant filter condition (the subset this plug-in writes). */
export type QdrantCondition =
  | { key: string; match: { value: string | number | boolean } }
  | { key: string; range: { gte: number; lte: number } }
  | { should: QdrantCondition[] };

/** Metadata lives under `metadata` in the payload; a key that is a metadata key cannot leave it. */
function condition(key: string, v: MetadataValue): QdrantCondition {
  const path = `metadata.${key}`;
  // Qdrant matches keywords, integers and booleans exactly; a float only through a range.
  if (typeof v === 'number' && !Number.isInteger(v)) return { key: path, range: { gte: v, lte: v } };
  return { key: path, match: { value: v } };
}

/** Every key must hold; a list of values is "any of" (a `should` group). */
export function qdrantFilter(filter: MetadataFilter | undefined): { must: QdrantCondition[] } | undefined {
  const entries = Object.entries(filter ?? {});
  if (entries.length === 0) return undefined;
  return {
    must: entries.map(([k, v]) =>
      Array.isArray(v) ? { should: v.map((x) => condition(k, x)) } : condition(k, v),
    ),
  };
}

import type { MetadataFilter } from '../vector-store';

/**
 * A metadata filter as SQL over the `metadata` jsonb column: each key must equal one of its values,
 * compared as JSON (so 2025 and "2025" differ, as in every other store). Keys and values travel as
 * parameters; only placeholders are written into the text. Each key's condition is also written as
 * containment (`metadata @> {"key": value}` for any of the values), which the table's GIN index on
 * `metadata` answers: a filtered search is exact, so without it every row of the table would be read.
 * For the scalar values a filter holds, containment and equality agree; the equality stays the rule.
 */
export function pgvectorWhere(
  filter: MetadataFilter | undefined,
  firstParam: number,
): { sql: string; params: unknown[] } {
  const parts: string[] = [];
  const params: unknown[] = [];
  for (const [key, value] of Object.entries(filter ?? {})) {
    const values = Array.isArray(value) ? value : [value];
    const k = firstParam + params.length;
    params.push(
      key,
      values.map((v) => JSON.stringify(v)),
      values.map((v) => JSON.stringify({ [key]: v })),
    );
    parts.push(`metadata @> ANY ($${k + 2}::jsonb[]) AND metadata -> $${k} = ANY ($${k + 1}::jsonb[])`);
  }
  return { sql: parts.length ? parts.join(' AND ') : 'true', params };
}

export const vectorText = (v: Float32Array): string => `[${Array.from(v).join(',')}]`;

/** PostgreSQL's type oid of `real` (float4), fixed by the server. */
const FLOAT4_OID = 700;

/**
 * Vectors of one dimension as one `real[]` parameter in PostgreSQL's binary array format, all of them
 * end to end (the statement cuts row i's vector out as elements i*d+1 .. (i+1)*d). As text each
 * vector was about 7 KB of decimals to print, send and parse (17 digits a float); here the float32
 * values go as they are, 8 bytes each (a length and the value), and arrive bit for bit.
 */
export function vectorsBinary(vectors: Float32Array[], dimension: number): Buffer {
  const n = vectors.length * dimension;
  const buf = Buffer.allocUnsafe(20 + n * 8);
  buf.writeInt32BE(1, 0); // dimensions
  buf.writeInt32BE(0, 4); // no nulls
  buf.writeInt32BE(FLOAT4_OID, 8);
  buf.writeInt32BE(n, 12);
  buf.writeInt32BE(1, 16); // lower bound
  let at = 20;
  for (const v of vectors) {
    if (v.length !== dimension)
      throw new RangeError(`a vector of ${v.length} values among vectors of ${dimension}`);
    for (let i = 0; i < dimension; i++, at += 8) {
      buf.writeInt32BE(4, at);
      buf.writeFloatBE(v[i], at + 4);
    }
  }
  return buf;
}

/**
 * A search of a table: the setting its transaction runs first, then the statement. The HNSW scan
 * yields ef_search candidates before the filter, so a filtered search could miss the very match it
 * asks for (pgvector 0.6 has no iterative scans; many near-equal vectors make it likely): a filtered
 * search is exact, over the rows the filter keeps (found through the GIN index, see pgvectorWhere).
 * Unfiltered, ef_search covers topK.
 */
export function pgvectorSearch(
  vector: Float32Array,
  topK: number,
  filter?: MetadataFilter,
): { setting: string; sql: (table: string) => string; params: unknown[] } {
  const where = pgvectorWhere(filter, 3);
  return {
    setting: where.params.length
      ? 'SET LOCAL enable_indexscan = off'
      : `SET LOCAL hnsw.ef_search = ${Math.max(40, topK)}`,
    sql: (t) =>
      `SELECT id, content, metadata, 1 - (embedding <=> $1::vector) AS similarity FROM ${t}
        WHERE ${where.sql} ORDER BY embedding <=> $1::vector LIMIT $2`,
    params: [vectorText(vector), topK, ...where.params],
  };
}

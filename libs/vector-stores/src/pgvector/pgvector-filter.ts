import type { MetadataFilter } from '../vector-store';

/**
 * A metadata filter as SQL over the `metadata` jsonb column: each key must equal one of its values,
 * compared as JSON (so 2025 and "2025" differ, as in every other store). Keys and values travel as
 * parameters; only placeholders are written into the text.
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
    );
    parts.push(`metadata -> $${k} = ANY ($${k + 1}::jsonb[])`);
  }
  return { sql: parts.length ? parts.join(' AND ') : 'true', params };
}

/**
 * The search playground's request: each vector store names its container with its own field
 * (docs/documents.md "Search"), and metadata filters are key = value rows, a value read as JSON when it is
 * JSON (`2026`, `true`, `[2025, 2026]` for "any of") and as text otherwise.
 */
export const STORES = ['pgvector', 'qdrant', 'weaviate', 'milvus', 'chroma'] as const;
export type Store = (typeof STORES)[number];

export function containerField(store: string): {
  field: 'table' | 'className' | 'collection';
  label: string;
} {
  if (store === 'pgvector') return { field: 'table', label: 'Table' };
  if (store === 'weaviate') return { field: 'className', label: 'Class' };
  return { field: 'collection', label: 'Collection' };
}

export interface FilterRow {
  key: string;
  value: string;
}

export type FilterValue = string | number | boolean | (string | number | boolean)[];

/** The filter object, or the problem with a row (named by its key) that the API would refuse anyway. */
export function filterOf(rows: readonly FilterRow[]): {
  filter?: Record<string, FilterValue>;
  problem?: string;
} {
  const filter: Record<string, FilterValue> = {};
  for (const { key, value } of rows) {
    const k = key.trim();
    if (k === '' && value.trim() === '') continue;
    if (!/^[A-Za-z0-9_]{1,64}$/.test(k))
      return { problem: `Filter key "${k}" must be 1-64 letters, digits or _.` };
    const parsed = valueOf(value.trim());
    if (parsed === undefined)
      return { problem: `Filter ${k}: a list may hold only text, numbers or booleans.` };
    filter[k] = parsed;
  }
  return Object.keys(filter).length ? { filter } : {};
}

function valueOf(text: string): FilterValue | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return text;
  }
  const scalar = (v: unknown): v is string | number | boolean =>
    typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
  if (scalar(json)) return json;
  if (Array.isArray(json)) return json.every(scalar) ? json : undefined;
  // An object or null is not a condition the API takes: match the text as written.
  return text;
}

/** The request body of `POST /search/{store}`. */
export function searchBody(
  store: string,
  container: string,
  schema: string,
  query: string,
  topK: number,
  filter: Record<string, FilterValue> | undefined,
): Record<string, unknown> {
  const body: Record<string, unknown> = { query, topK, [containerField(store).field]: container.trim() };
  if (store === 'pgvector' && schema.trim()) body.schema = schema.trim();
  if (filter) body.filter = filter;
  return body;
}

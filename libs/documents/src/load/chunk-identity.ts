import { createHash } from 'node:crypto';
import type { ChunkMetadata, MetadataValue } from '@tapyard/vector-stores';
import { METADATA_KEY } from '@tapyard/vector-stores';

/**
 * A chunk's id: a UUID (version 8, name-based) of (uri, chunk index, chunk text hash). The same
 * document cut the same way gives the same ids, so loading it again writes nothing; a changed chunk
 * gets a new id and its old one is removed as stale.
 */
export function chunkId(uri: string, index: number, text: string): string {
  const textHash = createHash('sha256').update(text).digest();
  const h = createHash('sha256')
    .update(uri)
    .update('\u0000')
    .update(String(index))
    .update('\u0000')
    .update(textHash)
    .digest();
  h[6] = (h[6] & 0x0f) | 0x80;
  h[8] = (h[8] & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}

/** The platform's keys: a tap's own metadata never overrides them. */
export const PLATFORM_KEYS = [
  'uri',
  'filename',
  'chunkIndex',
  'pipeline',
  'tap',
  'contentHash',
  'ingestedAt',
  'title',
];
const MAX_VALUE_CHARS = 2000;

/**
 * A tap record's own metadata as chunk metadata: keys every store can filter on (others dropped),
 * scalars kept as they are, anything else as JSON text; `keep` (when set) selects keys.
 */
export function tapMetadata(raw: unknown, keep: readonly string[] | null): ChunkMetadata {
  const out: ChunkMetadata = {};
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return out;
  for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
    if (!METADATA_KEY.test(k) || PLATFORM_KEYS.includes(k) || (keep && !keep.includes(k))) continue;
    if (v === null || v === undefined) continue;
    let value: MetadataValue;
    if (typeof v === 'string' || typeof v === 'boolean') value = v;
    else if (typeof v === 'number') {
      if (!Number.isFinite(v)) continue;
      value = v;
    } else value = JSON.stringify(v);
    out[k] =
      typeof value === 'string' && value.length > MAX_VALUE_CHARS ? value.slice(0, MAX_VALUE_CHARS) : value;
  }
  return out;
}

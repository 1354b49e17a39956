import type { MetadataFilter, MetadataValue } from '../vector-store';

/**
 * A value as a Milvus expression literal. Strings are written with every character that could end or
 * bend the literal escaped (quote, backslash, control characters), so a caller's value never leaves
 * its quotes; numbers must be finite.
 */
export function milvusLiteral(v: MetadataValue): string {
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Error('a filter number must be finite');
    return String(v);
  }
  let out = '"';
  for (const ch of v) {
    const code = ch.codePointAt(0) ?? 0;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (code < 0x20 || code === 0x7f) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/** `metadata["k"] == v` / `metadata["k"] in [...]`, joined by `and`; keys are METADATA_KEY-checked. */
export function milvusFilter(filter: MetadataFilter | undefined): string {
  return Object.entries(filter ?? {})
    .map(([k, v]) => {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) throw new Error(`'${k}' is not a metadata key`);
      const field = `metadata["${k}"]`;
      return Array.isArray(v)
        ? `${field} in [${v.map(milvusLiteral).join(', ')}]`
        : `${field} == ${milvusLiteral(v)}`;
    })
    .join(' and ');
}

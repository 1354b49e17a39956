/** Scales `v` to unit length in place (a zero vector stays zero); returns it. */
export function normalize(v: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i] * v[i];
  const n = Math.sqrt(sum);
  if (n > 0) for (let i = 0; i < v.length; i++) v[i] /= n;
  return v;
}

/**
 * Mean of the token vectors of each row that the attention mask keeps (sentence-transformers'
 * pooling), from a [rows, tokens, dim] tensor laid out row-major.
 */
export function meanPool(
  hidden: Float32Array,
  mask: ArrayLike<number | bigint>,
  rows: number,
  tokens: number,
  dim: number,
): Float32Array[] {
  const out: Float32Array[] = [];
  for (let r = 0; r < rows; r++) {
    const v = new Float32Array(dim);
    let kept = 0;
    for (let t = 0; t < tokens; t++) {
      if (!Number(mask[r * tokens + t])) continue;
      kept++;
      const base = (r * tokens + t) * dim;
      for (let d = 0; d < dim; d++) v[d] += hidden[base + d];
    }
    if (kept > 0) for (let d = 0; d < dim; d++) v[d] /= kept;
    out.push(v);
  }
  return out;
}

export function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return dot / Math.sqrt(na * nb);
}

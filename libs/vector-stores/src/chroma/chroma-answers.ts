/** The distance spaces a Chroma collection may use. */
export type ChromaSpace = 'cosine' | 'l2' | 'ip';

/**
 * Cosine similarity from the distance Chroma reports, for unit vectors (ours always are): `cosine`
 * gives 1 - cos, `ip` gives 1 - dot (the same thing), `l2` the squared distance 2 - 2cos. Collections
 * this plug-in makes use `cosine`; the others come from collections made elsewhere (Chroma's default
 * space is `l2`).
 */
export function chromaSimilarity(space: ChromaSpace | null | undefined, distance: number): number {
  const cos = space === 'l2' ? 1 - distance / 2 : 1 - distance;
  return Math.min(1, Math.max(-1, cos));
}

/** "Collection expecting embedding with dimension of 8, got 9": the two dimensions, else null. */
export function chromaDimensionError(message: string): { expected: number; actual: number } | null {
  const m = /expecting embedding with dimension of (\d+), got (\d+)/.exec(message);
  return m ? { expected: Number(m[1]), actual: Number(m[2]) } : null;
}

/** "Wrong input: Vector dimension error: expected dim: 8, got 9": the two dimensions, else null. */
export function qdrantDimensionError(message: string): { expected: number; actual: number } | null {
  const m = /Vector dimension error: expected dim: (\d+), got (\d+)/.exec(message);
  return m ? { expected: Number(m[1]), actual: Number(m[2]) } : null;
}

/**
 * The size of a collection's one unnamed vector, from its `config.params.vectors`. Named vectors (a
 * map of name to params) are not a layout this plug-in reads or writes: undefined.
 */
export function qdrantVectorSize(vectors: unknown): number | undefined {
  const size = (vectors as { size?: unknown } | null | undefined)?.size;
  return typeof size === 'number' ? size : undefined;
}

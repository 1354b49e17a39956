/** Counts text in the tokens of an embedder's own tokenizer (chunk sizes are given in these). */
export interface Tokenizer {
  /** Tokens of `text`, without the special tokens a model adds around an input. */
  count(text: string): number;
}

/**
 * Turns texts into unit-length vectors (so cosine similarity is their dot product). Built from the
 * environment's `embedding` secret, or the built-in offline model when there is none.
 */
export interface Embedder {
  /** Provider and model, e.g. `builtin:all-MiniLM-L6-v2`, `openai-compatible:nomic-embed-text`. */
  readonly model: string;
  readonly dimension: number;
  /** Longest input the model reads; longer inputs are truncated to it (chunks are cut below it). */
  readonly maxInputTokens: number;
  readonly tokenizer: Tokenizer;
  /** One vector per text, in order. Batches and retries internally. */
  embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]>;
}

export type { Embedder, Tokenizer } from './embedder';

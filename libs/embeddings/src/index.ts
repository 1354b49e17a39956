export type { Embedder, Tokenizer } from './embedder';
export { EMBEDDING_SECRET, EmbeddingsService } from './embeddings.service';
export { EmbeddingsModule } from './embeddings.module';
export { EMBEDDING_PROVIDERS, createEmbedder } from './create-embedder';
export { BUILTIN_MODEL, builtinEmbedder } from './builtin-embedder';
export { cosine, normalize } from './vectors';
export { EmbeddingErrorCode } from './embedding-errors';

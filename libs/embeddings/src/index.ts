export type { Embedder, Tokenizer } from './embedder';
export { EMBEDDING_SECRET, EmbeddingsService } from './embeddings.service';
export { EmbeddingsModule } from './embeddings.module';

import { EgressPolicy } from '@tapyard/egress';
import type { VectorStoreFactory } from '@tapyard/vector-stores';

export const VECTOR_STORES = ['qdrant', 'weaviate', 'milvus', 'chroma', 'pgvector'] as const;
export type VectorStoreKey = (typeof VECTOR_STORES)[number];

/**
 * Readiness of a vector store configured by the secret named after it (see docs/documents.md, "Vector store
 * secrets"): the store's own plug-in makes one real call through its official client (Qdrant and
 * Weaviate list collections, Milvus lists collections over gRPC, Chroma's heartbeat, pgvector checks
 * the `vector` extension), through the egress policy like every other call to that address.
 */
export async function probeVectorStore(
  store: VectorStoreKey,
  factory: VectorStoreFactory | null,
  fields: Record<string, string>,
  policy: EgressPolicy,
): Promise<void> {
  if (!factory) throw new Error(`no plug-in for ${store}`);
  const vs = factory(fields, policy);
  try {
    await vs.probe();
  } finally {
    void vs.close().catch(() => undefined);
  }
}

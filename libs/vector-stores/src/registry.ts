import type { VectorStoreName } from '@tapyard/model';
import { chromaStore } from './chroma/chroma.store';
import { milvusStore } from './milvus/milvus.store';
import { pgvectorStore } from './pgvector/pgvector.store';
import { qdrantStore } from './qdrant/qdrant.store';
import type { VectorStoreFactory } from './vector-store';
import { weaviateStore } from './weaviate/weaviate.store';

/**
 * A vector-store plug-in as registered: its name and the factory that builds a store from its secret's
 * fields. A factory never connects, and loads its SDK on the first call that needs it, so a process
 * that registers a store but never uses it does not pay for the SDK.
 */
export interface VectorStorePlugin {
  name: VectorStoreName;
  factory: VectorStoreFactory;
}

/**
 * The vector-store plug-ins the apps register (VectorStoreRegistryModule.forRoot(VECTOR_STORE_PLUGINS)).
 * Adding a vector store: its folder, and one line here.
 */
export const VECTOR_STORE_PLUGINS: readonly VectorStorePlugin[] = [
  { name: 'pgvector', factory: pgvectorStore },
  { name: 'qdrant', factory: qdrantStore },
  { name: 'chroma', factory: chromaStore },
  { name: 'milvus', factory: milvusStore },
  { name: 'weaviate', factory: weaviateStore },
];

/**
 * The vector stores the app registered at boot (VectorStoreRegistryModule.forRoot provides the one
 * instance): who builds a store of each name. A name the contract knows but no plug-in registers is
 * a store this app cannot reach, answered like an unconfigured one.
 */
export class VectorStoreRegistry {
  private readonly byName: ReadonlyMap<VectorStoreName, VectorStoreFactory>;

  constructor(plugins: readonly VectorStorePlugin[]) {
    const byName = new Map<VectorStoreName, VectorStoreFactory>();
    for (const p of plugins) {
      if (byName.has(p.name)) throw new Error(`vector store plug-in '${p.name}' is registered twice`);
      byName.set(p.name, p.factory);
    }
    this.byName = byName;
  }

  /** The factory of the store, or null when no plug-in registers it. */
  factory(name: VectorStoreName): VectorStoreFactory | null {
    return this.byName.get(name) ?? null;
  }

  /** The registered stores' names, in registration order. */
  names(): VectorStoreName[] {
    return [...this.byName.keys()];
  }
}

import { vectorStoreContract } from './support/vector-store-contract';

// Every store against its real local server (scripts/services up <store>). A new store adds its line.
vectorStoreContract('pgvector');
vectorStoreContract('qdrant');
vectorStoreContract('chroma');
vectorStoreContract('milvus');
vectorStoreContract('weaviate');

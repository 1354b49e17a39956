import { probePostgres } from './data-stores.probe';
import { joinUrl, probeHttp } from './http.probe';

export const VECTOR_STORES = ['qdrant', 'weaviate', 'milvus', 'chroma', 'pgvector'] as const;
export type VectorStoreKey = (typeof VECTOR_STORES)[number];

type Fields = Record<string, string>;

function required(fields: Fields, store: string, ...names: string[]): string {
  for (const n of names) if (fields[n]) return fields[n];
  throw new Error(`secret '${store}' has no ${names.join(' or ')} field`);
}

function bearer(token: string | undefined): Record<string, string> {
  return token ? { authorization: `Bearer ${token}` } : {};
}

/**
 * Readiness of each vector store, configured by the secret named after it (see README, "Vector
 * store secrets"). Each probe asks the store's own readiness route, not just its port.
 */
export async function probeVectorStore(
  store: VectorStoreKey,
  fields: Fields,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<void> {
  switch (store) {
    case 'qdrant': {
      const headers: Record<string, string> = fields.apiKey ? { 'api-key': fields.apiKey } : {};
      return probeHttp(joinUrl(required(fields, store, 'url'), '/readyz'), signal, { headers });
    }
    case 'weaviate':
      return probeHttp(joinUrl(required(fields, store, 'url'), '/v1/.well-known/ready'), signal, {
        headers: bearer(fields.apiKey),
      });
    case 'milvus':
      return probeHttp(joinUrl(required(fields, store, 'url'), '/v2/vectordb/collections/list'), signal, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...bearer(fields.token) },
        body: '{}',
      });
    case 'chroma': {
      const headers: Record<string, string> = fields.token ? { 'x-chroma-token': fields.token } : {};
      return probeHttp(joinUrl(required(fields, store, 'url'), '/api/v2/heartbeat'), signal, { headers });
    }
    case 'pgvector': {
      const config = fields.connectionString
        ? { connectionString: fields.connectionString }
        : {
            host: required(fields, store, 'host'),
            port: fields.port ? Number(fields.port) : 5432,
            user: fields.user ?? fields.username,
            password: fields.password,
            database: fields.database ?? fields.dbName,
          };
      const rows = await probePostgres(
        config,
        timeoutMs,
        signal,
        "SELECT 1 FROM pg_extension WHERE extname = 'vector'",
      );
      if (rows.length === 0) throw new Error('the vector extension is not installed in that database');
      return;
    }
  }
}

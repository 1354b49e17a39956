import { EgressPolicy } from '@tapyard/egress';
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
  policy: EgressPolicy,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<void> {
  switch (store) {
    case 'qdrant': {
      const headers: Record<string, string> = fields.apiKey ? { 'api-key': fields.apiKey } : {};
      return probeHttp(policy, joinUrl(required(fields, store, 'url'), '/readyz'), signal, { headers });
    }
    case 'weaviate':
      return probeHttp(policy, joinUrl(required(fields, store, 'url'), '/v1/.well-known/ready'), signal, {
        headers: bearer(fields.apiKey),
      });
    case 'milvus':
      return probeHttp(
        policy,
        joinUrl(required(fields, store, 'url'), '/v2/vectordb/collections/list'),
        signal,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...bearer(fields.token) },
          body: '{}',
        },
      );
    case 'chroma': {
      const headers: Record<string, string> = fields.token ? { 'x-chroma-token': fields.token } : {};
      return probeHttp(policy, joinUrl(required(fields, store, 'url'), '/api/v2/heartbeat'), signal, {
        headers,
      });
    }
    case 'pgvector': {
      const target = pgTarget(fields);
      // Connect to the address the policy checked, never to a second lookup of the name.
      const permit = await policy.check(target.host, target.port);
      const rows = await probePostgres(
        { ...target, host: permit.address },
        timeoutMs,
        signal,
        "SELECT 1 FROM pg_extension WHERE extname = 'vector'",
      );
      if (rows.length === 0) throw new Error('the vector extension is not installed in that database');
      return;
    }
  }
}

interface PgTarget {
  host: string;
  port: number;
  user?: string;
  password?: string;
  database?: string;
}

/** The server a pgvector secret names, from `connectionString` or from separate fields. */
function pgTarget(fields: Fields): PgTarget {
  if (fields.connectionString) {
    let url: URL;
    try {
      url = new URL(fields.connectionString);
    } catch {
      throw new Error("secret 'pgvector' has a connectionString that is not a postgres:// URL");
    }
    if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
      throw new Error("secret 'pgvector' has a connectionString that is not a postgres:// URL");
    }
    const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
    return {
      host: url.hostname,
      port: url.port ? Number(url.port) : 5432,
      user: url.username ? decodeURIComponent(url.username) : undefined,
      password: url.password ? decodeURIComponent(url.password) : undefined,
      database: name || undefined,
    };
  }
  return {
    host: required(fields, 'pgvector', 'host'),
    port: fields.port ? Number(fields.port) : 5432,
    user: fields.user ?? fields.username,
    password: fields.password,
    database: fields.database ?? fields.dbName,
  };
}

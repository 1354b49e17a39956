import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { EgressPolicy } from '@tapyard/egress';
import type { VectorStoreName } from '@tapyard/model';
import { VECTOR_STORE_PLUGINS, VectorStore, VectorStoreRegistry } from '@tapyard/vector-stores';

const cache = new Map<string, Record<string, string>>();

/**
 * The secret fields that point Tapyard at the local peer of `store`: `scripts/services up <store>`
 * starts it when needed (idempotent) and prints them as its last line (addendum "Local peers").
 */
export function vectorPeerFields(store: VectorStoreName): Record<string, string> {
  return peerFields(store);
}

/** The same for any optional peer of scripts/services (kafka, activemq, ...). */
export function peerFields(store: string): Record<string, string> {
  const known = cache.get(store);
  if (known) return known;
  const out = execFileSync('bash', [join(__dirname, '..', '..', 'scripts', 'services'), 'up', store], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 20 * 60_000,
  });
  const last = out.trim().split('\n').pop() ?? '';
  const fields = JSON.parse(last) as Record<string, string>;
  cache.set(store, fields);
  return fields;
}

/** The loopback host:port a peer's fields name, allow-listed as an operator would. */
export function peerPolicy(fields: Record<string, string>): EgressPolicy {
  const raw = fields.url ?? fields.connectionString;
  if (raw) {
    const u = new URL(raw);
    const port = Number(u.port || (u.protocol === 'https:' ? 443 : u.protocol === 'postgres:' ? 5432 : 80));
    const grpc = fields.grpcPort ? [{ host: u.hostname, port: Number(fields.grpcPort) }] : [];
    return new EgressPolicy([{ host: u.hostname, port }, ...grpc]);
  }
  return new EgressPolicy([{ host: fields.host, port: Number(fields.port) }]);
}

/** `TAP_EGRESS_ALLOW` for a peer: every loopback endpoint its fields name (a gRPC port too). */
export function peerAllowList(fields: Record<string, string>): string {
  const raw = fields.url ?? fields.connectionString;
  const u = new URL(raw);
  const port =
    u.port || (u.protocol === 'https:' ? '443' : u.protocol.startsWith('postgres') ? '5432' : '80');
  const out = [`${u.hostname}:${port}`];
  if (fields.grpcPort) out.push(`${u.hostname}:${fields.grpcPort}`);
  return out.join(',');
}

/** The stores the apps register (VectorStoreRegistryModule.forRoot(VECTOR_STORE_PLUGINS)), for tests that reach a store directly. */
export const VECTOR_STORE_REGISTRY = new VectorStoreRegistry(VECTOR_STORE_PLUGINS);

/** A store of `name` built by its registered plug-in from `fields`. */
export function openVectorStore(
  name: VectorStoreName,
  fields: Record<string, string>,
  policy: EgressPolicy,
): VectorStore {
  const factory = VECTOR_STORE_REGISTRY.factory(name);
  if (!factory) throw new Error(`no vector store plug-in registered as ${name}`);
  return factory(fields, policy);
}

/**
 * Drops a pgvector table a test's pipeline made in the shared local database (`public.<collection>`
 * unless named with its schema): the suites run again and again, and nothing else removes it.
 */
export async function dropPgvectorTable(collection: string): Promise<void> {
  const fields = vectorPeerFields('pgvector');
  const store = openVectorStore('pgvector', fields, peerPolicy(fields));
  try {
    await store.drop(collection.includes('.') ? collection : store.containerName(collection));
  } finally {
    await store.close();
  }
}

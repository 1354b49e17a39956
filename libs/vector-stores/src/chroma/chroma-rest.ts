import type { EgressPolicy } from '@tapyard/egress';
import { jsonExchange } from '../json-exchange';
import type { ChromaSpace } from './chroma-answers';
import type { ChromaWhere } from './chroma-filter';

/** Search answers carry chunk texts: room for topK = 100 long chunks, and for a page of collections. */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;
const TIMEOUT_MS = 30_000;
/** A batch of 1000 large vectors is written (and logged) before Chroma answers. */
const BATCH_TIMEOUT_MS = 90_000;
/** What Chroma's own clients use when none is named: a single-tenant server has only these. */
const SCOPE = '/api/v2/tenants/default_tenant/databases/default_database';

/** An answer of Chroma other than 2xx: its status and Chroma's words (`{error, message}`). */
export class ChromaAnswerError extends Error {
  constructor(
    readonly status: number,
    readonly said: string | undefined,
    request: string,
  ) {
    super(`chroma answered HTTP ${status} to ${request}${said ? `: ${said.slice(0, 300)}` : ''}`);
    this.name = 'ChromaAnswerError';
  }
}

/** A collection as Chroma describes it (the parts read here). */
export interface ChromaCollection {
  id: string;
  name: string;
  metadata: Record<string, unknown> | null;
  configuration_json?: {
    hnsw?: { space?: ChromaSpace } | null;
    spann?: { space?: ChromaSpace } | null;
  } | null;
}

/** What `get` answers: the ids always, the rest as included. */
export interface ChromaRecords {
  ids: string[];
  embeddings?: number[][] | null;
}

/** What `query` answers for one query vector each: lists of lists, as included. */
export interface ChromaMatches {
  ids: string[][];
  documents?: (string | null)[][] | null;
  metadatas?: (Record<string, unknown> | null)[][] | null;
  distances?: (number | null)[][] | null;
}

/** What a server says it takes (`GET /api/v2/pre-flight-checks`). */
interface Preflight {
  maxBatchSize: number;
  base64: boolean;
}

/**
 * The calls of Chroma's HTTP API (v2, default tenant and database) this plug-in makes. Each is an
 * egressRequest: the address checked by the egress policy on every call, the connection made to the
 * very address it checked (over https too, the name kept for the certificate), and a redirect never
 * followed. (The official client's global fetch looked the name up again on every call.)
 */
export class ChromaRest {
  private preflight: Promise<Preflight> | null = null;

  constructor(
    private readonly policy: EgressPolicy,
    /** The server's origin (like Chroma's own client, a path in the secret's URL is not used). */
    private readonly origin: string,
    private readonly token: string | undefined,
  ) {}

  async heartbeat(signal?: AbortSignal): Promise<void> {
    await this.call('GET', '/api/v2/heartbeat', undefined, signal);
  }

  /** One page of collections, in Chroma's order. */
  async listCollections(limit: number, offset: number): Promise<ChromaCollection[]> {
    const page = await this.call<unknown>('GET', `${SCOPE}/collections?limit=${limit}&offset=${offset}`);
    if (!Array.isArray(page)) throw notChroma('GET /collections');
    return page as ChromaCollection[];
  }

  /** The collection, or null when Chroma has none of that name. */
  async getCollection(name: string): Promise<ChromaCollection | null> {
    try {
      return collectionOf(await this.call('GET', `${SCOPE}/collections/${name}`), 'GET /collections/{name}');
    } catch (err) {
      if (err instanceof ChromaAnswerError && err.status === 404) return null;
      throw err;
    }
  }

  /** Made with the cosine space and no embedding function (vectors are always ours). 409 if it exists. */
  async createCollection(name: string, metadata: Record<string, unknown>): Promise<ChromaCollection> {
    const body = {
      name,
      configuration: { hnsw: { space: 'cosine' }, embedding_function: null },
      metadata,
      get_or_create: false,
    };
    return collectionOf(await this.call('POST', `${SCOPE}/collections`, body), 'POST /collections');
  }

  /** Replaces the collection's metadata. */
  async setMetadata(id: string, metadata: Record<string, unknown>): Promise<void> {
    await this.call('PUT', `${SCOPE}/collections/${encodeURIComponent(id)}`, { new_metadata: metadata });
  }

  async deleteCollection(name: string): Promise<void> {
    await this.call('DELETE', `${SCOPE}/collections/${name}`);
  }

  async get(
    id: string,
    body: { where?: ChromaWhere; limit?: number; include: ('embeddings' | 'documents' | 'metadatas')[] },
  ): Promise<ChromaRecords> {
    const answer = await this.call<ChromaRecords>('POST', `${this.records(id)}/get`, body);
    if (!Array.isArray(answer.ids)) throw notChroma('POST /get');
    return answer;
  }

  /** The most records one upsert may carry, as the server says. */
  async maxBatchSize(): Promise<number> {
    return (await this.preflightChecks()).maxBatchSize;
  }

  async upsert(
    id: string,
    records: {
      ids: string[];
      embeddings: Float32Array[];
      documents: string[];
      metadatas: Record<string, unknown>[];
    },
  ): Promise<void> {
    // Packed little-endian float32 in base64 when the server takes it, as Chroma's own client does:
    // a quarter of the JSON numbers' size.
    const { base64 } = await this.preflightChecks();
    const embeddings = records.embeddings.map((v) =>
      base64 ? Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') : Array.from(v),
    );
    await this.call(
      'POST',
      `${this.records(id)}/upsert`,
      { ...records, embeddings },
      undefined,
      BATCH_TIMEOUT_MS,
    );
  }

  async delete(id: string, ids: string[]): Promise<void> {
    await this.call('POST', `${this.records(id)}/delete`, { ids });
  }

  async query(
    id: string,
    body: {
      query_embeddings: number[][];
      n_results: number;
      where?: ChromaWhere;
      include: ('documents' | 'metadatas' | 'distances')[];
    },
  ): Promise<ChromaMatches> {
    const answer = await this.call<ChromaMatches>('POST', `${this.records(id)}/query`, body);
    if (!Array.isArray(answer.ids)) throw notChroma('POST /query');
    return answer;
  }

  private records(id: string): string {
    return `${SCOPE}/collections/${encodeURIComponent(id)}`;
  }

  private preflightChecks(): Promise<Preflight> {
    this.preflight ??= this.call<{ max_batch_size?: unknown; supports_base64_encoding?: unknown }>(
      'GET',
      '/api/v2/pre-flight-checks',
    ).then(
      (p) => ({
        maxBatchSize:
          typeof p.max_batch_size === 'number' && p.max_batch_size > 0 ? p.max_batch_size : Infinity,
        base64: p.supports_base64_encoding === true,
      }),
      (err: unknown) => {
        this.preflight = null;
        throw err;
      },
    );
    return this.preflight;
  }

  /**
   * The parsed JSON of a 2xx answer; anything else is a ChromaAnswerError. Names in paths were
   * checked by the store.
   */
  private async call<T>(
    method: string,
    path: string,
    body?: unknown,
    signal?: AbortSignal,
    timeoutMs = TIMEOUT_MS,
  ): Promise<T> {
    const { status, data } = await jsonExchange(this.policy, `${this.origin}${path}`, {
      method,
      headers: this.token ? { 'x-chroma-token': this.token } : {},
      body,
      signal,
      timeoutMs,
      maxBytes: MAX_ANSWER_BYTES,
    });
    const request = `${method} ${path.replace(SCOPE, '').split('?')[0]}`;
    if (status < 200 || status > 299) throw new ChromaAnswerError(status, said(data), request);
    if (data === null || typeof data !== 'object') throw notChroma(request);
    return data as T;
  }
}

function collectionOf(data: unknown, request: string): ChromaCollection {
  const c = data as Partial<ChromaCollection>;
  if (typeof c.id !== 'string' || typeof c.name !== 'string') throw notChroma(request);
  return { ...c, metadata: c.metadata ?? null } as ChromaCollection;
}

function notChroma(request: string): ChromaAnswerError {
  return new ChromaAnswerError(200, undefined, `${request} (the answer is not Chroma's JSON)`);
}

/** Chroma's own words in an error answer (`{error, message}`); never a body that is not its JSON. */
function said(data: unknown): string | undefined {
  const message = (data as { message?: unknown } | undefined)?.message;
  return typeof message === 'string' ? message : undefined;
}

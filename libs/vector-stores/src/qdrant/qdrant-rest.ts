import type { EgressPolicy } from '@tapyard/egress';
import { jsonExchange } from '../json-exchange';

/** Search answers carry payload texts: room for topK = 100 long chunks, and for the largest scroll page. */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;
const TIMEOUT_MS = 30_000;

/** An answer of Qdrant other than 2xx: its status and its JSON body (`{status: {error}}`). */
export class QdrantAnswerError extends Error {
  constructor(
    readonly status: number,
    readonly data: unknown,
    request: string,
  ) {
    const said = (data as { status?: { error?: unknown } } | undefined)?.status?.error;
    super(`qdrant answered HTTP ${status} to ${request}${typeof said === 'string' ? `: ${said}` : ''}`);
    this.name = 'QdrantAnswerError';
  }
}

/** A point as `query` answers it (with its payload). */
export interface QdrantHit {
  id: string | number;
  score: number;
  payload: Record<string, unknown> | null;
}

/**
 * The calls of Qdrant's REST API this plug-in makes. Each is an egressRequest: the address checked by
 * the egress policy on every call, the connection made to the very address it checked, and a redirect
 * never followed. (The official client's fetch follows redirects and takes no option to stop it.)
 */
export class QdrantRest {
  constructor(
    private readonly policy: EgressPolicy,
    /** The store's base URL, a path prefix included. */
    private readonly base: URL,
    private readonly apiKey: string | undefined,
  ) {}

  async collections(): Promise<string[]> {
    const r = await this.call<{ collections: { name: string }[] }>('GET', '/collections');
    return r.collections.map((c) => c.name);
  }

  async exists(name: string): Promise<boolean> {
    return (await this.call<{ exists: boolean }>('GET', `/collections/${name}/exists`)).exists;
  }

  /** `config.params.vectors` of a collection. */
  async vectors(name: string): Promise<unknown> {
    const r = await this.call<{ config: { params: { vectors?: unknown } } }>('GET', `/collections/${name}`);
    return r.config.params.vectors;
  }

  async create(name: string, size: number, metadata?: Record<string, string>): Promise<void> {
    await this.call('PUT', `/collections/${name}`, {
      vectors: { size, distance: 'Cosine' },
      ...(metadata ? { metadata } : {}),
    });
  }

  /** `config.metadata` of a collection (Qdrant 1.16 and later keep it; older ones answer none). */
  async metadata(name: string): Promise<Record<string, unknown> | null> {
    const r = await this.call<{ config: { metadata?: Record<string, unknown> | null } }>(
      'GET',
      `/collections/${name}`,
    );
    return r.config.metadata ?? null;
  }

  async keywordIndex(name: string, field: string): Promise<void> {
    await this.call('PUT', `/collections/${name}/index?wait=true`, {
      field_name: field,
      field_schema: 'keyword',
    });
  }

  async scroll(
    name: string,
    body: Record<string, unknown>,
  ): Promise<{ points: { id: string | number }[]; next_page_offset?: string | number | null }> {
    return this.call('POST', `/collections/${name}/points/scroll`, body);
  }

  async upsert(name: string, points: { id: string; vector: number[]; payload: unknown }[]): Promise<void> {
    await this.call('PUT', `/collections/${name}/points?wait=true`, { points });
  }

  async deletePoints(name: string, ids: string[]): Promise<void> {
    await this.call('POST', `/collections/${name}/points/delete?wait=true`, { points: ids });
  }

  async query(name: string, body: Record<string, unknown>): Promise<{ points: QdrantHit[] }> {
    return this.call('POST', `/collections/${name}/points/query`, body);
  }

  async drop(name: string): Promise<void> {
    await this.call('DELETE', `/collections/${name}`);
  }

  /** `result` of a 2xx JSON answer; anything else is a QdrantAnswerError. Names were checked by the store. */
  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const { status, data } = await jsonExchange(this.policy, `${this.base.href.replace(/\/$/, '')}${path}`, {
      method,
      headers: this.apiKey ? { 'api-key': this.apiKey } : {},
      body,
      timeoutMs: TIMEOUT_MS,
      maxBytes: MAX_ANSWER_BYTES,
    });
    const request = `${method} ${path.split('?')[0]}`;
    if (status < 200 || status > 299) throw new QdrantAnswerError(status, data, request);
    if (data === undefined || data === null || typeof data !== 'object' || !('result' in data)) {
      throw new QdrantAnswerError(status, undefined, `${request} (the answer is not Qdrant's JSON)`);
    }
    return (data as { result: T }).result;
  }
}

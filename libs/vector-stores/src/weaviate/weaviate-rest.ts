import type { EgressPolicy } from '@tapyard/egress';
import { jsonExchange } from '../json-exchange';

/** Search answers carry chunk texts, and a batch's answer echoes its objects with their vectors. */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;
const TIMEOUT_MS = 30_000;
/** A batch of 500 large vectors is written (and indexed) before Weaviate answers. */
const BATCH_TIMEOUT_MS = 90_000;

/** An answer of Weaviate other than 2xx, or a GraphQL answer with errors: its status and Weaviate's words. */
export class WeaviateAnswerError extends Error {
  constructor(
    readonly status: number,
    said: string | undefined,
    request: string,
  ) {
    super(`weaviate answered HTTP ${status} to ${request}${said ? `: ${said.slice(0, 300)}` : ''}`);
    this.name = 'WeaviateAnswerError';
  }
}

/** A class as `GET /v1/schema` describes it (the parts read here). */
export interface WeaviateClass {
  class: string;
  description?: string;
  properties?: { name: string; dataType: string[] }[];
  /** Named vectors (what Tapyard creates: one, `default`); absent for a class of one unnamed vector. */
  vectorConfig?: Record<string, unknown>;
}

/** An object of a batch write. */
export interface WeaviateObject {
  class: string;
  id: string;
  properties: Record<string, unknown>;
  vector?: number[];
  vectors?: Record<string, number[]>;
}

/**
 * The calls of Weaviate's REST and GraphQL API this plug-in makes. Each is an egressRequest: the address
 * checked by the egress policy on every call, the connection made to the very address it checked, and
 * a redirect never followed. (The official client makes its REST calls with the global fetch, which
 * follows redirects, and takes no fetch of ours; its gRPC calls depend on those REST calls.)
 */
export class WeaviateRest {
  constructor(
    private readonly policy: EgressPolicy,
    /** The server's base URL, a path prefix included. */
    private readonly base: URL,
    private readonly apiKey: string | undefined,
  ) {}

  async classes(signal?: AbortSignal): Promise<WeaviateClass[]> {
    const answer = await this.call<{ classes?: unknown }>('GET', '/schema', undefined, signal);
    if (!Array.isArray(answer.classes)) throw notWeaviate('GET /schema');
    return answer.classes as WeaviateClass[];
  }

  /** The class, or null when Weaviate has none of that name. */
  async schema(name: string): Promise<WeaviateClass | null> {
    try {
      const answer = await this.call<WeaviateClass>('GET', `/schema/${name}`);
      if (typeof answer.class !== 'string') throw notWeaviate('GET /schema/{class}');
      return answer;
    } catch (err) {
      if (err instanceof WeaviateAnswerError && err.status === 404) return null;
      throw err;
    }
  }

  async create(definition: Record<string, unknown>): Promise<void> {
    await this.call('POST', '/schema', definition);
  }

  async addProperty(name: string, property: Record<string, unknown>): Promise<void> {
    await this.call('POST', `/schema/${name}/properties`, property);
  }

  async drop(name: string): Promise<void> {
    await this.call('DELETE', `/schema/${name}`);
  }

  /** Writes the objects (one of the same id is replaced); the messages of those Weaviate refused. */
  async batch(objects: WeaviateObject[]): Promise<string[]> {
    type Result = { result?: { errors?: { error?: { message?: string }[] } } };
    const answer = await this.call<Result[]>(
      'POST',
      '/batch/objects',
      { objects },
      undefined,
      BATCH_TIMEOUT_MS,
    );
    if (!Array.isArray(answer)) throw notWeaviate('POST /batch/objects');
    return answer.flatMap((o) => o.result?.errors?.error?.map((e) => e.message ?? 'unknown error') ?? []);
  }

  /** Deletes the objects of `name` matching `where` (at most QUERY_MAXIMUM_RESULTS, 10 000 by default). */
  async deleteWhere(name: string, where: Record<string, unknown>): Promise<void> {
    const answer = await this.call<{ results?: { failed?: number } }>('DELETE', '/batch/objects', {
      match: { class: name, where },
      output: 'minimal',
    });
    const failed = answer.results?.failed ?? 0;
    if (failed > 0)
      throw new WeaviateAnswerError(200, `${failed} objects were not deleted`, 'DELETE /batch/objects');
  }

  /** `data.Get.<name>` of a GraphQL `Get` query (built by the store from checked names and escaped values). */
  async get(name: string, query: string): Promise<Record<string, unknown>[]> {
    type Answer = {
      data?: { Get?: Record<string, Record<string, unknown>[] | null> };
      errors?: { message?: string }[];
    };
    const answer = await this.call<Answer>('POST', '/graphql', { query });
    if (answer.errors?.length) throw new WeaviateAnswerError(200, answer.errors[0].message, 'POST /graphql');
    return answer.data?.Get?.[name] ?? [];
  }

  /**
   * The parsed JSON of a 2xx answer (an empty object for an empty one); anything else is a
   * WeaviateAnswerError. Names were checked by the store.
   */
  private async call<T>(
    method: string,
    path: string,
    body?: unknown,
    signal?: AbortSignal,
    timeoutMs = TIMEOUT_MS,
  ): Promise<T> {
    const res = await jsonExchange(this.policy, `${this.base.href.replace(/\/$/, '')}/v1${path}`, {
      method,
      headers: this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {},
      body,
      signal,
      timeoutMs,
      maxBytes: MAX_ANSWER_BYTES,
    });
    // Weaviate answers some changes with no body at all.
    const data = res.text === '' ? {} : res.data;
    const request = `${method} ${path.split('?')[0]}`;
    if (res.status < 200 || res.status > 299) throw new WeaviateAnswerError(res.status, said(data), request);
    if (data === null || typeof data !== 'object') throw notWeaviate(request);
    return data as T;
  }
}

function notWeaviate(request: string): WeaviateAnswerError {
  return new WeaviateAnswerError(200, undefined, `${request} (the answer is not Weaviate's JSON)`);
}

/** Weaviate's own words in an error answer; never a body that is not its JSON. */
function said(data: unknown): string | undefined {
  const d = data as { error?: { message?: unknown }[]; message?: unknown } | undefined;
  // `{error: [{message}]}`, or `{code, message}` from its request validation.
  const message = d?.error?.[0]?.message ?? d?.message;
  return typeof message === 'string' ? message : undefined;
}

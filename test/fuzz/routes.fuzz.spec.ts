import fc from 'fast-check';
import { TestApi, startApi } from '../support/apps';
import { newBootstrapKey } from '../support/auth';
import { propertyRuns, propertyTimeout } from '../support/property-runs';
import {
  FuzzRequest,
  OpenApiDocument,
  fuzzableRoutes,
  mutatedRequest,
  sweptRequests,
} from './support/openapi-requests';

interface Failure {
  request: FuzzRequest;
  status: number;
  problem: string;
  body: string;
}

/**
 * Issue 27 item 6: every route of the running API's own OpenAPI document, with bodies, queries and
 * path values built from its schemas and broken one place at a time, sent with the strongest key
 * (the bootstrap key: every capability, so the request reaches validation and the services). No
 * answer is a 500, every refusal is in the contract's error shape and names what is wrong, and no
 * body pollutes Object.prototype. A seeded, counted run in `npm test`; `npm run fuzz` scales it.
 */
describe('route fuzz: bodies, queries and paths from the OpenAPI document', () => {
  const boot = newBootstrapKey();
  let api: TestApi;
  let doc: OpenApiDocument;

  beforeAll(async () => {
    api = await startApi({ USE_API_KEYS: 'true', TAPYARD_BOOTSTRAP_API_KEY: boot });
    doc = (await api.http.get('/api/docs-json').set('x-api-key', boot).expect(200)).body as OpenApiDocument;
  });
  afterAll(() => api.close());

  async function send(r: FuzzRequest): Promise<{ status: number; type: string; text: string }> {
    let req = api.http[r.method.toLowerCase() as 'get' | 'post' | 'put' | 'delete'](r.url)
      .set('x-api-key', boot)
      .timeout({ response: 60_000 });
    if (r.body !== null) req = req.set('content-type', 'application/json').send(r.body);
    const res = await req;
    return { status: res.status, type: String(res.headers['content-type'] ?? ''), text: res.text };
  }

  /** Why an answer breaks the contract, or null when it keeps it. */
  function problemWith(status: number, type: string, text: string): string | null {
    if (({} as Record<string, unknown>).fuzzPolluted !== undefined) return 'Object.prototype was polluted';
    if (status < 400) return null;
    if (status >= 500 && status !== 503) return `answered ${status}`;
    // Search names a model or dimension mismatch in text/plain, as the spec says.
    if (type.startsWith('text/plain')) return text.trim().length > 0 ? null : 'an empty text/plain error';
    let body: { statusCode?: unknown; code?: unknown; message?: unknown; details?: unknown };
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      return 'an error body that is not JSON';
    }
    if (body.statusCode !== status || typeof body.code !== 'string')
      return 'an error body outside the contract';
    if (typeof body.message !== 'string' || body.message.length < 10)
      return 'an error message that names nothing';
    if (/^(Bad Request|Unprocessable Entity|Internal Server Error)$/.test(body.message))
      return 'a generic error message';
    if (status === 503 && body.code === 'internal') return 'a 503 that hides its reason';
    if (body.details !== undefined) {
      const ok =
        Array.isArray(body.details) &&
        body.details.every(
          (d: { field?: unknown; problem?: unknown }) =>
            typeof d.field === 'string' && typeof d.problem === 'string',
        );
      if (!ok) return 'details without a field and a problem';
    }
    return null;
  }

  it(
    'answers every broken request with a 4xx naming the problem (or a named 503), never a 500',
    async () => {
      const routes = fuzzableRoutes(doc);
      // The document lists the routes the fuzz must reach: a wiring change that hides them fails here.
      expect(routes.map((r) => `${r.method} ${r.path}`)).toEqual(
        expect.arrayContaining(['POST /api/v1/pipeline', 'POST /api/v1/tap', 'GET /api/v1/pipeline/status']),
      );
      const failures: Failure[] = [];
      const check = async (request: FuzzRequest): Promise<void> => {
        const { status, type, text } = await send(request);
        const problem = problemWith(status, type, text);
        if (problem === null) return;
        const body = request.body === null ? null : request.body.slice(0, 300);
        failures.push({ request: { ...request, body }, status, problem, body: text.slice(0, 300) });
        delete (Object.prototype as Record<string, unknown>).fuzzPolluted;
      };
      for (const [i, route] of routes.entries()) {
        for (const request of sweptRequests(doc, route)) await check(request);
        await fc.assert(fc.asyncProperty(mutatedRequest(doc, route), check), propertyRuns(10, 27_000 + i));
      }
      expect(failures).toEqual([]);
      // The service keeps serving.
      await api.http.get('/livez').expect(200);
    },
    propertyTimeout(600_000),
  );
});

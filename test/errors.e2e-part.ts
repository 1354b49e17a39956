import { TestApi, startApi } from './support/apps';

describe('error bodies and request handling', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startApi({ BODY_LIMIT: '64kb' });
  });
  afterAll(() => api.close());

  it('malformed JSON is a 400 in the contract shape, without echoing the input', async () => {
    const res = await api.http
      .put('/api/v1/secrets/x')
      .set('content-type', 'application/json')
      .send('{"password": sekrit-value}')
      .expect(400);
    expect(res.body).toEqual({
      statusCode: 400,
      error: 'Bad Request',
      code: 'validation_failed',
      message: expect.stringMatching(/^request body is not valid JSON/),
    });
    expect(JSON.stringify(res.body)).not.toContain('sekrit');
  });

  it('an unknown route is a 404 naming the route', async () => {
    const res = await api.http.get('/api/v1/no/such/route?x=1').expect(404);
    expect(res.body).toEqual({
      statusCode: 404,
      error: 'Not Found',
      code: 'not_found',
      message: 'no route GET /api/v1/no/such/route',
    });
    await api.http.post('/nowhere').expect(404);
  });

  it('a body over BODY_LIMIT is a 413', async () => {
    const res = await api.http
      .put('/api/v1/secrets/big')
      .send({ blob: 'x'.repeat(100 * 1024) })
      .expect(413);
    expect(res.body).toEqual({
      statusCode: 413,
      error: 'Payload Too Large',
      code: 'payload_too_large',
      message: 'request body is larger than the configured limit (BODY_LIMIT)',
    });
    // The service keeps serving.
    await api.http.get('/api/v1/version').expect(200);
  });

  it('every response carries a request id, kept from the caller when sane, and logged', async () => {
    const mine = await api.http.get('/api/v1/version').set('x-request-id', 'trace-abc.123').expect(200);
    expect(mine.headers['x-request-id']).toBe('trace-abc.123');
    const generated = await api.http
      .get('/api/v1/version')
      .set('x-request-id', 'bad id with spaces')
      .expect(200);
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const line = api.logs
      .parsed()
      .find((l) => l.msg === 'request' && l.reqId === 'trace-abc.123' && l.path === '/api/v1/version');
    expect(line).toMatchObject({ method: 'GET', status: 200, level: 'info' });
  });
});

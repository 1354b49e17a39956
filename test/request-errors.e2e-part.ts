import { Server, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TestApi, startApi } from './support/apps';

/** Issue 27 item 6: a malformed body is a 400 naming the path and the valid choices, never a 500. */
describe('malformed request bodies', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startApi();
  });
  afterAll(() => api.close());

  const valid = {
    name: 'orders',
    source: { schemaProperties: { fields: [{ name: 'id', type: 'int' }] } },
    destination: { database: { table: 'orders' } },
  };

  async function refused(body: object): Promise<{ message: string; details: unknown }> {
    const res = await api.http.post('/api/v1/pipeline').send(body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    return res.body as { message: string; details: unknown };
  }

  it('names a missing source, schemaProperties, fields or destination instead of failing with a 500', async () => {
    const cases: [object, string][] = [
      [{ ...valid, source: undefined }, 'source'],
      [{ ...valid, source: null }, 'source'],
      [{ ...valid, source: {} }, 'source.schemaProperties'],
      [{ ...valid, source: { schemaProperties: {} } }, 'source.schemaProperties.fields'],
      [{ ...valid, destination: undefined }, 'destination'],
    ];
    for (const [body, field] of cases) {
      const { message, details } = await refused(body);
      expect(message).toBe(
        `invalid request: ${field} is required: must be ${field.endsWith('fields') ? 'an array' : 'an object'}`,
      );
      expect(details).toEqual([{ field, problem: expect.stringMatching(/^is required/) }]);
    }
  });

  it('names the wrong kind of value at its full path, without rules it cannot meet', async () => {
    const wrongKind = await refused({ ...valid, source: { schemaProperties: { fields: 'id' } } });
    expect(wrongKind.details).toEqual([
      { field: 'source.schemaProperties.fields', problem: 'must be an array' },
    ]);
    const wrongItems = await refused({ ...valid, source: { schemaProperties: { fields: [7] } } });
    expect(wrongItems.details).toEqual([
      { field: 'source.schemaProperties.fields[0]', problem: 'must be an object' },
    ]);
    const array = await api.http.post('/api/v1/pipeline').send([valid]).expect(400);
    expect(array.body.message).toBe('request body must be a JSON object (got an array)');
  });

  it('lists the valid choices and suggests the near miss', async () => {
    const section = await refused({ ...valid, destination: { objectstore: { bucket: 'b' } } });
    expect(section.message).toMatch(
      /^invalid request: destination\.objectstore should not exist \(did you mean 'objectStore'\?\): the destination sections are .*database.*objectStore/,
    );
    const property = await refused({ ...valid, destinaton: valid.destination });
    expect(property.details).toEqual([
      {
        field: 'destinaton',
        problem: expect.stringMatching(
          /^should not exist \(did you mean 'destination'\?\): the properties here are name, .*source.*destination/,
        ),
      },
    ]);
    const type = await refused({
      ...valid,
      source: { schemaProperties: { fields: [{ name: 'id', type: 'Int' }] } },
    });
    expect(type.details).toEqual([
      {
        field: 'source.schemaProperties.fields[0].type',
        problem: expect.stringMatching(
          /^must be one of the following values: boolean, int, .* \(did you mean 'int'\?\)$/,
        ),
      },
    ]);
    const wild = await refused({ ...valid, destination: { warehouse: {} } });
    expect(wild.message).not.toMatch(/did you mean/);
  });

  it('refuses JSON sent without the JSON content type with a 415 that says so', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded']) {
      const res = await api.http
        .post('/api/v1/pipeline')
        .set('content-type', type)
        .send(JSON.stringify(valid))
        .expect(415);
      expect(res.body).toEqual({
        statusCode: 415,
        error: 'Unsupported Media Type',
        code: 'unsupported_media_type',
        message: `request body must be JSON sent as content-type: application/json (got '${type}')`,
      });
    }
    // A body without any content-type header (supertest always sets one): a plain Node client on loopback.
    const server = api.app.getHttpServer() as Server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const untyped = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port, method: 'POST', path: '/api/v1/pipeline' },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify(valid));
    });
    expect(untyped.status).toBe(415);
    expect(JSON.parse(untyped.body).message).toBe(
      'request body must be JSON sent as content-type: application/json (the request has no content-type)',
    );
    // No body at all is still read as an empty object: the 400 names what is missing.
    const empty = await api.http.post('/api/v1/pipeline').expect(400);
    expect(empty.body.message).toMatch(/^invalid request: name is required/);
  });

  it('refuses a NUL character in a body string with a 400 (no stored text can hold one), not a 500', async () => {
    // Found by the route fuzz: the tap was saved, and PostgreSQL refused the NUL in its own words.
    const tap = { name: 'nul_tap', description: 'x', script: 'print(1)', targetPipeline: 'a\u0000b' };
    const res = await api.http.post('/api/v1/tap').send(tap).expect(400);
    expect(res.body.message).toBe("request body field 'targetPipeline' holds a NUL character (\\u0000)");
    // An escaped backslash before `u0000` is no NUL.
    const text = await api.http
      .post('/api/v1/tap')
      .send({ ...tap, targetPipeline: '', description: 'C:\\u0000 is a path' })
      .expect(200);
    expect(text.body).toMatchObject({ name: 'nul_tap' });
  });

  it('a NUL before a hostile nesting is still a plain 400, and the API keeps serving', async () => {
    // The NUL comes before the depth limit in the bytes: naming its field walks only what precedes it.
    const deep = `{"a":"x\\u0000","b":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    const res = await api.http.post('/api/v1/tap').set('content-type', 'application/json').send(deep);
    expect(res.status).toBe(400);
    expect(res.body.message).toBe("request body field 'a' holds a NUL character (\\u0000)");
    await api.http.get('/api/v1/version').expect(200);
  });
});

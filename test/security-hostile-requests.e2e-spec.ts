import { spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { TestApi, TestWorker, startApi, startWorker } from './support/apps';
import { TEST_OBJECT_STORE, testEnv, uniqueEnvironment } from './support/env';
import { waitForPublisher } from './support/ingest';
import { closedPort } from './support/net';
import { Spawned, spawnApp } from './support/processes';
import { dropPgvectorTable, vectorPeerFields } from './support/vector-peers';

/**
 * Hostile requests and jobs against real processes: a multipart body cut off inside its file part,
 * a malformed one, a slow one whose client vanishes, on every multipart route; a document tap whose
 * filenames are paths. The platform answers or drops them and keeps serving.
 */

/** Sends raw bytes as one HTTP request (chunked, so the body may end anywhere) and reads the answer. */
function rawRequest(
  port: number,
  path: string,
  headers: Record<string, string>,
  body: Buffer,
  opts: { slowAndVanish?: boolean } = {},
): Promise<{ status: number | null; text: string }> {
  return new Promise((resolveAnswer) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    const done = () => {
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      resolveAnswer({ status: m ? Number(m[1]) : null, text });
    };
    socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', done);
    socket.on('connect', () => {
      const head =
        `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n` +
        Object.entries(headers)
          .map(([k, v]) => `${k}: ${v}\r\n`)
          .join('') +
        '\r\n';
      socket.write(head);
      const chunk = Buffer.concat([
        Buffer.from(`${body.length.toString(16)}\r\n`),
        body,
        Buffer.from('\r\n'),
      ]);
      if (opts.slowAndVanish) {
        // Half the chunk, a pause, then the client disappears without ending the body.
        socket.write(chunk.subarray(0, Math.floor(chunk.length / 2)));
        setTimeout(() => socket.destroy(), 300);
        return;
      }
      socket.write(chunk);
      // Not end(): a half-closed client aborts its request in Node's HTTP server.
      socket.write('0\r\n\r\n');
    });
    // Bounded: an answer that never comes ends the exchange.
    setTimeout(() => socket.destroy(), 15_000).unref();
  });
}

const BOUNDARY = 'tapyardhostile';
const multipartHead = (fields: Record<string, string>, filename: string) =>
  Object.entries(fields)
    .map(([k, v]) => `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`)
    .join('') +
  `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\n` +
  'Content-Type: application/octet-stream\r\n\r\n';

describe('hostile requests: the API process keeps serving', () => {
  let api: Spawned;
  let port: number;
  let routes: string[];

  beforeAll(async () => {
    port = await closedPort();
    api = spawnApp('api', testEnv({ PORT: String(port), HOST: '127.0.0.1', ...TEST_OBJECT_STORE }));
    await api.waitFor(/Tapyard API listening/);
    const docs = (await (await fetch(`http://127.0.0.1:${port}/api/docs-json`)).json()) as {
      paths: Record<string, Record<string, { requestBody?: { content?: Record<string, unknown> } }>>;
    };
    // Every route that reads multipart bodies, from the API's own description: a new one is covered too.
    routes = Object.entries(docs.paths)
      .filter(([, ops]) => Object.values(ops).some((op) => op.requestBody?.content?.['multipart/form-data']))
      .map(([path]) => path);
  }, 120_000);

  afterAll(async () => {
    api.child.kill('SIGTERM');
    await api.exited;
  });

  const alive = async () => {
    expect(api.child.exitCode).toBeNull();
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/version`);
    expect(res.status).toBe(200);
  };

  it('keeps idle connections longer than a load balancer would (a reused connection never races its close)', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/version`);
    await res.text();
    expect(res.headers.get('keep-alive')).toBe('timeout=65');
  });

  it('knows the multipart routes', () => {
    expect(routes).toEqual(
      expect.arrayContaining([
        '/api/v1/pipeline/upload',
        '/api/v1/pipeline/generate',
        '/api/v1/pipeline/profile',
        '/api/v1/config/upload',
        '/api/v1/assistant/attachment',
      ]),
    );
  });

  it('a body that ends inside the file part is a 400 on every multipart route', async () => {
    for (const route of routes) {
      const body = Buffer.from(
        multipartHead({ pipeline: 'nothing', type: 'javascript' }, 'a.csv') +
          'id,name\n1,a\n2,b\n'.repeat(2000),
      );
      const res = await rawRequest(
        port,
        route,
        { 'Content-Type': `multipart/form-data; boundary=${BOUNDARY}` },
        body,
      );
      expect({ route, status: res.status }).toEqual({ route, status: 400 });
      expect(res.text).toMatch(/malformed multipart request|interrupted/);
      await alive();
    }
  });

  it('malformed bodies and missing boundaries are 400 on every multipart route', async () => {
    for (const route of routes) {
      const garbage = await rawRequest(
        port,
        route,
        { 'Content-Type': `multipart/form-data; boundary=${BOUNDARY}` },
        randomBytes(4096),
      );
      expect({ route, status: garbage.status }).toEqual({ route, status: 400 });
      const noBoundary = await rawRequest(
        port,
        route,
        { 'Content-Type': 'multipart/form-data' },
        // A body larger than the socket buffers: the 400 goes out before the body is read, and
        // must still reach the client (lingering close), not be lost to a TCP reset.
        Buffer.concat([Buffer.from(multipartHead({}, 'a.csv')), Buffer.alloc(4 << 20, 0x61)]),
      );
      expect({ route, status: noBoundary.status }).toEqual({ route, status: 400 });
      await alive();
    }
  });

  it('a client that vanishes mid-file leaves the API serving', async () => {
    for (const route of routes) {
      const body = Buffer.from(multipartHead({ pipeline: 'nothing' }, 'a.csv') + 'x,y\n'.repeat(50_000));
      await rawRequest(port, route, { 'Content-Type': `multipart/form-data; boundary=${BOUNDARY}` }, body, {
        slowAndVanish: true,
      });
      await alive();
    }
    expect(api.output()).not.toMatch(/Unexpected end of (form|file)\s*\n\s*at /);
  });
});

describe('document taps: a filename is metadata, never a path', () => {
  const env = uniqueEnvironment('docpath');
  const spoolDir = join(tmpdir(), `tapyard-docpath-${randomBytes(4).toString('hex')}`);
  const victim = join(tmpdir(), `tapyard-victim-${randomBytes(6).toString('hex')}.txt`);
  let api: TestApi;
  let worker: TestWorker;

  beforeAll(async () => {
    const flags = {
      TAPYARD_ENV: env,
      ...TEST_OBJECT_STORE,
      TAPYARD_SPOOL_DIR: spoolDir,
      PGVECTOR_URL: vectorPeerFields('pgvector').connectionString,
    };
    api = await startApi(flags);
    worker = await startWorker(flags);
    await api.http
      .post('/api/v1/pipeline')
      .send({
        name: 'pages',
        source: {
          fileAttributes: { unstructuredAttributes: { chunking: { size: 128 } } },
          schemaProperties: { fields: [] },
        },
        destination: { vectorStore: { store: 'pgvector', collection: `pages_${env.slice(-8)}` } },
      })
      .expect(200);
  }, 120_000);

  afterAll(async () => {
    await worker.close();
    await api.close();
    await dropPgvectorTable(`pages_${env.slice(-8)}`).catch(() => undefined);
  });

  it('loads documents named like paths without writing outside the spool, and the worker keeps working', async () => {
    // From the spool's environment directory, enough '..' to reach the filesystem root.
    const up = '../'.repeat(resolve(spoolDir, env).split('/').length + 2);
    const docs = [
      { uri: 'p/escape', filename: `${up}${victim.slice(1)}`, content: 'owned by a tap' },
      {
        uri: 'p/nodir',
        filename: `${up}no/such/dir/${randomBytes(4).toString('hex')}/x.txt`,
        content: 'nowhere',
      },
      { uri: 'p/dots', filename: '..', content: 'just dots' },
      { uri: 'p/plain', filename: 'plain.txt', content: 'an ordinary page' },
    ];
    const script = `
import json
DOCS = json.loads(${JSON.stringify(
      JSON.stringify(docs.map((d) => ({ ...d, content: Buffer.from(d.content).toString('base64') }))),
    )})
def fetch():
    for d in DOCS:
        yield d
`;
    await api.http
      .post('/api/v1/tap')
      .send({ name: 'paths', tapType: 'document', targetPipeline: 'pages', script })
      .expect(200);
    const run = await api.http.post('/api/v1/tap/run').send({ name: 'paths', mode: 'run' }).expect(200);
    expect(run.body.status).toBe('success');
    const done = await waitForPublisher(api.http, run.body.publisherToken);
    expect(done.rollup.jobs).toHaveLength(docs.length);
    expect(done.rollup.jobs.map((j) => [j.filename, j.status, j.lastError])).toEqual(
      docs.map((d) => [d.filename, 'success', null]),
    );
    expect(existsSync(victim)).toBe(false);
    // Whatever the jobs wrote beside the spool went again; nothing is left under its root either.
    const leftovers = existsSync(spoolDir)
      ? readdirSync(spoolDir, { recursive: true, encoding: 'utf8' }).filter((f) =>
          statSync(join(spoolDir, f)).isFile(),
        )
      : [];
    expect(leftovers).toEqual([]);
    // The filename stays the document's metadata.
    const hits = await api.http
      .post('/api/v1/search/pgvector')
      .send({ table: `pages_${env.slice(-8)}`, query: 'owned by a tap' })
      .expect(200);
    expect(JSON.stringify(hits.body)).toContain(victim.slice(1));
  });
});

describe('an error nothing caught', () => {
  it('is logged and the process keeps serving (API and worker install this at boot)', async () => {
    const shutdown = join(__dirname, '..', 'dist', 'libs', 'core', 'src', 'shutdown.js');
    const script = `
      const { surviveUncaughtErrors } = require(${JSON.stringify(shutdown)});
      surviveUncaughtErrors(require('pino')());
      const { Readable } = require('node:stream');
      new Readable({ read() {} }).destroy(new Error('a stream nobody listened to'));
      Promise.reject(new Error('a promise nobody awaited'));
      setTimeout(() => { console.log('still serving'); process.exit(0); }, 300);
    `;
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    expect(code).toBe(0);
    expect(out).toContain('still serving');
    expect(out).toMatch(/uncaught exception.*keeps serving/);
    expect(out).toContain('a stream nobody listened to');
    expect(out).toMatch(/unhandled promise rejection.*keeps serving/);
  });
});

import { randomBytes } from 'node:crypto';
import { AddressInfo, Server, Socket, createServer } from 'node:net';
import { signV4 } from 'minio/dist/main/signing.js';
import { HttpGetter } from './http-get';
import { S3RequestError, S3Requests } from './s3-requests';
import { SigV4, amzDate } from './sigv4';

/**
 * The staged parts' GET reader against a loopback server that answers byte by byte what each test
 * says: exact bytes whatever the reads, refusals, and every way an answer can break.
 */

type Answer = (socket: Socket, request: string) => Promise<void> | void;

interface Fake {
  port: number;
  /** Connections accepted so far. */
  connections: number;
  /** What the next request on any connection gets. */
  answers: Answer[];
  close(): Promise<void>;
}

async function fakeStore(): Promise<Fake> {
  const sockets = new Set<Socket>();
  const fake: Fake = { port: 0, connections: 0, answers: [], close: async () => undefined };
  const server: Server = createServer((socket) => {
    fake.connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let pending = '';
    socket.on('data', (d: Buffer) => {
      // As a real server: a connection it closed answers nothing more.
      if (socket.writableEnded) return;
      pending += d.toString('latin1');
      const end = pending.indexOf('\r\n\r\n');
      if (end < 0) return;
      const request = pending.slice(0, end);
      pending = pending.slice(end + 4);
      const answer = fake.answers.shift();
      if (!answer) return void socket.destroy();
      void answer(socket, request);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  fake.port = (server.address() as AddressInfo).port;
  fake.close = async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  };
  return fake;
}

const head = (status: string, headers: Record<string, string | number>) =>
  Buffer.from(
    `HTTP/1.1 ${status}\r\n${Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('')}\r\n`,
    'latin1',
  );

/** `bytes` written in pieces of the given sizes, each after the previous one left (so each is a read of its own, or joins one). */
async function writeInPieces(socket: Socket, bytes: Buffer, sizes: number[]): Promise<void> {
  let at = 0;
  for (let i = 0; at < bytes.length; i++) {
    const n = sizes[i % sizes.length];
    await new Promise<void>((r) => socket.write(bytes.subarray(at, at + n), () => r()));
    await new Promise((r) => setImmediate(r));
    at += n;
  }
}

const ok =
  (body: Buffer, extra: Record<string, string | number> = {}): Answer =>
  (socket) => {
    socket.write(Buffer.concat([head('200 OK', { 'content-length': body.length, ...extra }), body]));
  };

const anyLength = () => undefined;
const GET = 'GET /b/k HTTP/1.1\r\nhost: x\r\n\r\n';

describe('HttpGetter: GETs read into the answer’s own memory (loopback server)', () => {
  let fake: Fake;
  let getter: HttpGetter;

  beforeEach(async () => {
    fake = await fakeStore();
    getter = new HttpGetter({ host: '127.0.0.1', port: fake.port, idleMs: 5000 });
  });
  afterEach(async () => {
    getter.close();
    await fake.close();
  });

  it('reads bodies of odd sizes exactly, one after another on one kept connection', async () => {
    const bodies = [0, 1, 3, 65_537, (4 << 20) + 3, 17].map((n) => randomBytes(n));
    fake.answers.push(...bodies.map((b) => ok(b)));
    for (const b of bodies) {
      const got = await getter.get(GET, anyLength);
      expect(got.status).toBe(200);
      expect(got.body.equals(b)).toBe(true);
      // Its own memory: transferable to a thread without detaching anyone else's.
      expect(got.body.byteOffset).toBe(0);
      expect(got.body.buffer.byteLength).toBe(b.length);
    }
    expect(fake.connections).toBe(1);
  });

  it('a successful body lands in the memory the caller gives; a refusal’s in its own', async () => {
    const body = randomBytes((1 << 20) + 5);
    const xml = '<Error><Code>NoSuchKey</Code></Error>';
    fake.answers.push(
      ok(body),
      (s) =>
        void s.write(
          Buffer.concat([head('404 Not Found', { 'content-length': xml.length }), Buffer.from(xml)]),
        ),
    );
    const given = Buffer.alloc(body.length);
    const asked: number[] = [];
    const memory = (length: number) => (asked.push(length), given);
    const got = await getter.get(GET, anyLength, memory);
    expect(got.body).toBe(given);
    expect(given.equals(body)).toBe(true);
    const refused = await getter.get(GET, anyLength, memory);
    expect(refused.body.toString()).toBe(xml);
    expect(asked).toEqual([body.length]);
  });

  it('an answer split anywhere (inside the status line, the headers, the body) is put together exactly', async () => {
    const body = randomBytes(300_001);
    const whole = Buffer.concat([head('200 OK', { 'content-length': body.length, etag: '"x"' }), body]);
    const splits: Array<Array<[number, number[]]>> = [
      // The head a byte at a time, then the body in small odd pieces.
      [
        [200, [1]],
        [whole.length, [5, 3, 1000]],
      ],
      [[whole.length, [7, 65_536 * 2 + 5]]],
    ];
    for (const split of splits) {
      fake.answers.push(async (socket) => {
        let at = 0;
        for (const [to, sizes] of split) {
          await writeInPieces(socket, whole.subarray(at, to), sizes);
          at = to;
        }
      });
      const got = await getter.get(GET, anyLength);
      expect(got.body.equals(body)).toBe(true);
      expect(got.headers.get('etag')).toBe('"x"');
    }
  });

  it('a refusal comes back with its status and body; the connection is kept', async () => {
    const xml = '<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>';
    fake.answers.push(
      (s) =>
        void s.write(
          Buffer.concat([
            head('503 Service Unavailable', { 'content-length': xml.length }),
            Buffer.from(xml),
          ]),
        ),
      ok(Buffer.from('after')),
    );
    const refused = await getter.get(GET, anyLength);
    expect(refused.status).toBe(503);
    expect(refused.body.toString()).toBe(xml);
    expect((await getter.get(GET, anyLength)).body.toString()).toBe('after');
    expect(fake.connections).toBe(1);
  });

  it('a body the caller refuses by its length is not read, and its connection is dropped', async () => {
    fake.answers.push(ok(randomBytes(10_000)), ok(Buffer.from('next')));
    await expect(
      getter.get(GET, (n) => {
        throw new Error(`too long: ${n}`);
      }),
    ).rejects.toThrow('too long: 10000');
    expect((await getter.get(GET, anyLength)).body.toString()).toBe('next');
    expect(fake.connections).toBe(2);
  });

  it('a truncated body fails the request, naming how much came', async () => {
    fake.answers.push((s) => {
      s.end(Buffer.concat([head('200 OK', { 'content-length': 1000 }), randomBytes(500)]));
    });
    await expect(getter.get(GET, anyLength)).rejects.toThrow(
      'the object store closed the connection after 500 of 1000 bytes',
    );
  });

  it('a connection reset in the middle of a body fails the request', async () => {
    fake.answers.push(async (s) => {
      await new Promise<void>((r) =>
        s.write(Buffer.concat([head('200 OK', { 'content-length': 1 << 20 }), randomBytes(70_000)]), () =>
          r(),
        ),
      );
      s.resetAndDestroy();
    });
    await expect(getter.get(GET, anyLength)).rejects.toThrow(/ECONNRESET|closed the connection/);
  });

  it('refuses what a GET of S3 never answers: chunked bodies, no length, bytes past the body, not HTTP', async () => {
    fake.answers.push((s) => void s.write(head('200 OK', { 'transfer-encoding': 'chunked' })));
    await expect(getter.get(GET, anyLength)).rejects.toThrow(
      'the object store answered with transfer-encoding chunked; a content-length is needed',
    );
    fake.answers.push((s) => void s.write(head('200 OK', { etag: '"x"' })));
    await expect(getter.get(GET, anyLength)).rejects.toThrow(
      'the object store answered without a content-length',
    );
    fake.answers.push((s) => void s.write('SSH-2.0-OpenSSH_9.2\r\n\r\n'));
    await expect(getter.get(GET, anyLength)).rejects.toThrow(
      /answered 'SSH-2.0-OpenSSH_9.2', not an HTTP\/1.1 status/,
    );
    // Four bytes too many: the answer is whole and taken, the connection is not used again.
    fake.answers.push(
      (s) => void s.write(Buffer.concat([head('200 OK', { 'content-length': 2 }), Buffer.from('okjunk')])),
      ok(Buffer.from('fresh')),
    );
    expect((await getter.get(GET, anyLength)).body.toString()).toBe('ok');
    expect((await getter.get(GET, anyLength)).body.toString()).toBe('fresh');
    expect(fake.connections).toBe(5);
  });

  it('a kept connection the store closed meanwhile is replaced; the GET is sent again once', async () => {
    fake.answers.push(
      (s) => {
        s.end(Buffer.concat([head('200 OK', { 'content-length': 3 }), Buffer.from('one')]));
      },
      ok(Buffer.from('two')),
    );
    expect((await getter.get(GET, anyLength)).body.toString()).toBe('one');
    expect((await getter.get(GET, anyLength)).body.toString()).toBe('two');
    expect(fake.connections).toBe(2);
  });

  it('`connection: close` is honoured: the next request opens a new connection', async () => {
    fake.answers.push(ok(Buffer.from('a'), { connection: 'close' }), ok(Buffer.from('b')));
    expect((await getter.get(GET, anyLength)).body.toString()).toBe('a');
    expect((await getter.get(GET, anyLength)).body.toString()).toBe('b');
    expect(fake.connections).toBe(2);
  });
});

describe('S3Requests.get through the reader (loopback server)', () => {
  let fake: Fake;
  let s3: S3Requests;

  beforeEach(async () => {
    fake = await fakeStore();
    s3 = new S3Requests({
      endpoint: `http://127.0.0.1:${fake.port}`,
      accessKey: 'AK',
      secretKey: 'SK',
      region: 'us-east-1',
    });
  });
  afterEach(async () => {
    await fake.close();
  });

  it('a missing object is null, another refusal an S3RequestError with its code', async () => {
    const xml = (code: string) => `<Error><Code>${code}</Code><Message>m</Message></Error>`;
    const refuse =
      (status: string, code: string): Answer =>
      (s) =>
        void s.write(
          Buffer.concat([head(status, { 'content-length': xml(code).length }), Buffer.from(xml(code))]),
        );
    fake.answers.push(refuse('404 Not Found', 'NoSuchKey'), refuse('403 Forbidden', 'AccessDenied'));
    expect(await s3.get('b', 'spool/x/part-000001', 1 << 20)).toBeNull();
    const err = await s3.get('b', 'spool/x/part-000001', 1 << 20).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(S3RequestError);
    expect((err as S3RequestError).code).toBe('AccessDenied');
  });

  it('a name holding CR LF stays inside the request line (no header of its making)', async () => {
    let seen = '';
    fake.answers.push((s, request) => {
      seen = request;
      ok(Buffer.from('x'))(s, request);
    });
    await s3.get('b\r\nx-evil: 1', 'spool/a\r\nx-evil: 2\r\n\r\nGET /b/other', 10);
    const lines = seen.split('\r\n');
    expect(lines[0]).toBe(
      'GET /b%0D%0Ax-evil%3A%201/spool/a%0D%0Ax-evil%3A%202%0D%0A%0D%0AGET%20/b/other HTTP/1.1',
    );
    expect(lines.filter((l) => l.toLowerCase().startsWith('x-evil'))).toEqual([]);
  });

  it('the request is signed as the minio client would sign it', async () => {
    let seen = '';
    fake.answers.push((s, request) => {
      seen = request;
      ok(Buffer.from('x'))(s, request);
    });
    await s3.get('b', "spool/odd name (1)/part+'*", 10);
    const [start, ...lines] = seen.split('\r\n');
    expect(start).toBe('GET /b/spool/odd%20name%20%281%29/part%2B%27%2A HTTP/1.1');
    const headers = Object.fromEntries(
      lines.map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 2)]),
    );
    const { authorization, ...rest } = headers;
    const date = new Date(
      `${rest['x-amz-date'].slice(0, 4)}-${rest['x-amz-date'].slice(4, 6)}-${rest['x-amz-date'].slice(6, 11)}:${rest['x-amz-date'].slice(11, 13)}:${rest['x-amz-date'].slice(13, 15)}Z`,
    );
    expect(authorization).toBe(
      signV4(
        { method: 'GET', path: start.split(' ')[1], headers: rest, protocol: 'http:' },
        'AK',
        'SK',
        'us-east-1',
        date,
        'UNSIGNED-PAYLOAD',
      ),
    );
  });
});

describe('SigV4: the signing key derived once a day', () => {
  it('signs as the minio client does, on either side of midnight (the key changes with the day)', () => {
    const signer = new SigV4('AK', 'SK', 'eu-west-3');
    for (const at of [
      '2026-11-27T23:59:59Z',
      '2026-11-28T00:00:00Z',
      '2026-11-28T12:34:56Z',
      '2026-11-27T23:59:58Z',
    ]) {
      const date = new Date(at);
      const headers = {
        host: 'store:9000',
        'x-amz-date': amzDate(date),
        'x-amz-content-sha256': 'UNSIGNED-PAYLOAD',
        'x-amz-checksum-mode': 'ENABLED',
        'content-length': '5',
      };
      expect(signer.authorization('PUT', '/b/k', headers, 'UNSIGNED-PAYLOAD')).toBe(
        signV4(
          { method: 'PUT', path: '/b/k', headers, protocol: 'http:' },
          'AK',
          'SK',
          'eu-west-3',
          date,
          'UNSIGNED-PAYLOAD',
        ),
      );
    }
  });
});

import { randomBytes } from 'node:crypto';
import { AddressInfo, Server, Socket, createServer, connect } from 'node:net';
import { createLogger, loadConfig } from '@tapyard/core';
import { ObjectStore, S3RequestError, S3Requests } from '@tapyard/objectstore';
import { TEST_OBJECT_STORE, testEnv, uniqueEnvironment } from './support/env';
import { blackhole } from './support/net';

/**
 * The staging path's own signed PUT and GET (S3Requests) against real MinIO: the store checks our
 * signature and our CRC32, and a body corrupted on the way is refused in either direction.
 */

/** A TCP relay to MinIO that flips one byte of the stream after `after` bytes in one direction. */
async function corruptingRelay(
  target: number,
  direction: 'up' | 'down',
  after: number,
): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(target, '127.0.0.1');
    sockets.add(client).add(upstream);
    let seen = 0;
    let flipped = false;
    const corrupt = (chunk: Buffer): Buffer => {
      if (!flipped && seen + chunk.length > after) {
        const copy = Buffer.from(chunk);
        copy[after - seen] ^= 0xff;
        flipped = true;
        seen += chunk.length;
        return copy;
      }
      seen += chunk.length;
      return chunk;
    };
    client.on('data', (c: Buffer) => upstream.write(direction === 'up' ? corrupt(c) : c));
    upstream.on('data', (c: Buffer) => client.write(direction === 'down' ? corrupt(c) : c));
    for (const [a, b] of [
      [client, upstream],
      [upstream, client],
    ]) {
      a.on('end', () => b.end());
      a.on('error', () => b.destroy());
      a.on('close', () => sockets.delete(a));
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

describe('the staging data path: signed PUT and GET with a CRC32 (real MinIO)', () => {
  const env = uniqueEnvironment('s3direct');
  const config = loadConfig(testEnv({ TAPYARD_ENV: env }));
  const store = new ObjectStore(config, createLogger('warn', 's3-direct-test'));
  const minioPort = Number(new URL(TEST_OBJECT_STORE.OBJECT_STORE_ENDPOINT).port);
  const direct = (endpoint: string, secretKey = TEST_OBJECT_STORE.OBJECT_STORE_SECRET_KEY) =>
    new S3Requests({
      endpoint,
      accessKey: TEST_OBJECT_STORE.OBJECT_STORE_ACCESS_KEY,
      secretKey,
      region: config.objectStore.region,
    });
  let bucket: string;

  beforeAll(async () => {
    bucket = await store.bucket(env, 'staged');
  });

  it('writes an object from its chunks and reads it back whole; a missing one is null', async () => {
    const chunks = [randomBytes(70_000), randomBytes(1), Buffer.alloc(0), randomBytes(3 << 20)];
    await store.putChunks(bucket, 'spool/x/part-000000', chunks, 'application/octet-stream');
    const back = await store.getBuffer(bucket, 'spool/x/part-000000', 8 << 20);
    expect(back?.equals(Buffer.concat(chunks))).toBe(true);
    // Its own memory, so it can be handed to a thread without copying.
    expect(back?.buffer.byteLength).toBe(back?.length);
    // What the client sees is the same object.
    const viaClient: Buffer[] = [];
    for await (const c of (await store.get(bucket, 'spool/x/part-000000')) as AsyncIterable<Buffer>)
      viaClient.push(c);
    expect(Buffer.concat(viaClient).equals(Buffer.concat(chunks))).toBe(true);
    expect(await store.getBuffer(bucket, 'spool/x/part-999999', 8 << 20)).toBeNull();
  });

  it('keys with characters S3 encodes are signed as the store reads them', async () => {
    const key = "spool/odd name (1)/part+'*!~.csv";
    await store.putChunks(bucket, key, [Buffer.from('a,b\n')], 'text/csv');
    expect((await store.getBuffer(bucket, key, 100))?.toString()).toBe('a,b\n');
  });

  it('refuses an object larger than the bound before reading it', async () => {
    await store.putChunks(bucket, 'spool/x/big', [randomBytes(10_000)], 'application/octet-stream');
    await expect(store.getBuffer(bucket, 'spool/x/big', 9_999)).rejects.toThrow(/at most 9999 are read/);
  });

  it('a wrong secret is refused by the store (the signature is checked)', async () => {
    const wrong = direct(TEST_OBJECT_STORE.OBJECT_STORE_ENDPOINT, 'not-the-secret-key');
    const err = await wrong.put(bucket, 'spool/x/denied', [Buffer.from('x')], 'text/plain').catch((e) => e);
    expect(err).toBeInstanceOf(S3RequestError);
    expect((err as S3RequestError).code).toBe('SignatureDoesNotMatch');
  });

  it('a part corrupted on its way to the store is refused by the store', async () => {
    const body = randomBytes(200_000);
    // Past the request head (about 600 bytes), inside the body.
    const relay = await corruptingRelay(minioPort, 'up', 50_000);
    try {
      const err = await direct(`http://127.0.0.1:${relay.port}`)
        .put(bucket, 'spool/x/corrupt-up', [body], 'application/octet-stream')
        .catch((e) => e);
      expect(err).toBeInstanceOf(S3RequestError);
      expect((err as S3RequestError).code).toMatch(/BadDigest|Checksum/i);
    } finally {
      await relay.close();
    }
    expect(await store.getBuffer(bucket, 'spool/x/corrupt-up', 1 << 20)).toBeNull();
  });

  it('a part corrupted on its way back is refused by the reader', async () => {
    const body = randomBytes(200_000);
    await store.putChunks(bucket, 'spool/x/corrupt-down', [body], 'application/octet-stream');
    const relay = await corruptingRelay(minioPort, 'down', 50_000);
    try {
      await expect(
        direct(`http://127.0.0.1:${relay.port}`).get(bucket, 'spool/x/corrupt-down', 1 << 20),
      ).rejects.toThrow(/CRC32 checksum: it was corrupted on the way/);
    } finally {
      await relay.close();
    }
  });

  it('a store that accepts the connection and never answers fails the request, it does not hang', async () => {
    const hole = await blackhole();
    try {
      const hanging = new S3Requests({
        endpoint: `http://127.0.0.1:${hole.port}`,
        accessKey: 'a',
        secretKey: 'b',
        region: 'us-east-1',
        idleTimeoutMs: 1000,
      });
      await expect(hanging.get(bucket, 'spool/x/part-000000', 1 << 20)).rejects.toThrow(
        'the object store did not answer within 1 s',
      );
      await expect(
        hanging.put(bucket, 'spool/x/part-000000', [Buffer.from('x')], 'text/plain'),
      ).rejects.toThrow('the object store did not answer within 1 s');
    } finally {
      await hole.close();
    }
  });
});

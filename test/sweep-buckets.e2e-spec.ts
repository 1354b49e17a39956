import { randomBytes } from 'node:crypto';
import { Client } from 'minio';
import { TEST_OBJECT_STORE } from './support/env';
import { sweepStaleTestBuckets } from './support/sweep-buckets';

describe('the sweep of buckets earlier test runs left', () => {
  const url = new URL(TEST_OBJECT_STORE.OBJECT_STORE_ENDPOINT);
  const client = new Client({
    endPoint: url.hostname,
    port: Number(url.port || 80),
    useSSL: false,
    accessKey: TEST_OBJECT_STORE.OBJECT_STORE_ACCESS_KEY,
    secretKey: TEST_OBJECT_STORE.OBJECT_STORE_SECRET_KEY,
  });
  const id = randomBytes(4).toString('hex');
  const full = `t-sweep-${id}-raw`;
  const empty = `t-sweep-${id}-taps`;
  const other = `keep-sweep-${id}`;

  afterAll(async () => {
    for (const b of [full, empty, other]) {
      if (!(await client.bucketExists(b))) continue;
      for await (const o of client.listObjectsV2(b, '', true)) await client.removeObject(b, o.name as string);
      await client.removeBucket(b);
    }
  });

  it('removes matching buckets with their objects and leaves the rest', async () => {
    for (const b of [full, empty, other]) await client.makeBucket(b);
    await client.putObject(full, 'a/b.csv', Buffer.from('x\n1\n'));
    await client.putObject(other, 'kept.csv', Buffer.from('x\n1\n'));
    const mine = (b: string) => b.includes(`-sweep-${id}`);
    // Too young: nothing goes.
    expect(await sweepStaleTestBuckets({ matches: mine })).toEqual({ removed: 0, left: 0 });
    expect(await client.bucketExists(full)).toBe(true);
    const swept = await sweepStaleTestBuckets({
      olderThanMs: -60_000,
      matches: (b) => mine(b) && b.startsWith('t-'),
    });
    expect(swept).toEqual({ removed: 2, left: 0 });
    expect(await client.bucketExists(full)).toBe(false);
    expect(await client.bucketExists(empty)).toBe(false);
    expect(await client.bucketExists(other)).toBe(true);
  });
});

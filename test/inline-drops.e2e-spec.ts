import { Job, Queue } from 'bullmq';
import Redis from 'ioredis';
import { queuePrefix } from '@tapyard/core';
import { InlineDrops, QUEUES } from '@tapyard/queue';
import { TEST_REDIS_URL, uniqueEnvironment } from './support/env';

/**
 * The files finished jobs carried inline leave Redis in batches: the jobs that finish within the
 * batch's delay go in one pipeline. Against real Redis, with BullMQ's own job records.
 */
describe('InlineDrops (real Redis)', () => {
  const env = uniqueEnvironment('drops');
  const opts = { connection: { url: TEST_REDIS_URL }, prefix: queuePrefix(env) };
  let queue: Queue;
  let redis: Redis;

  beforeAll(() => {
    queue = new Queue(QUEUES.ingest, opts);
    redis = new Redis(TEST_REDIS_URL);
  });

  afterAll(async () => {
    await queue.obliterate({ force: true });
    await queue.close();
    redis.disconnect();
  });

  const file = Buffer.from('id,name\n1,a\n').toString('base64');
  const add = (name: string) =>
    queue.add('load', { pipelineToken: name, inline: file }, { jobId: name }) as Promise<Job>;
  const dataOf = async (id: string) =>
    JSON.parse((await redis.hget(`${queuePrefix(env)}:${QUEUES.ingest}:${id}`, 'data')) ?? 'null') as Record<
      string,
      unknown
    > | null;
  it('drops the files of jobs that finish within its delay together, keeping their size, and recreates no trimmed job', async () => {
    const drops = new InlineDrops(TEST_REDIS_URL, 200);
    const jobs = await Promise.all(['a', 'b', 'c'].map(add));
    for (const job of jobs) await drops.drop(job);
    // Not yet: they wait for the others that finish within the delay.
    expect(await dataOf('a')).toMatchObject({ inline: file });
    // Trimmed by BullMQ meanwhile (removeOnComplete): nothing is made again under its key.
    await jobs[2].remove();
    await drops.flush();
    for (const id of ['a', 'b'])
      expect(await dataOf(id)).toEqual({
        pipelineToken: id,
        inlineDropped: Buffer.byteLength(file, 'base64'),
      });
    expect(await dataOf('c')).toBeNull();
    await drops.close();
  });

  it('sends a batch by itself once its delay ends, and after close() drops each file at once', async () => {
    const drops = new InlineDrops(TEST_REDIS_URL, 50);
    await drops.drop(await add('d'));
    const started = Date.now();
    while ((await dataOf('d'))?.inline !== undefined && Date.now() - started < 5000)
      await new Promise((r) => setTimeout(r, 10));
    expect(await dataOf('d')).toMatchObject({ inlineDropped: Buffer.byteLength(file, 'base64') });
    await drops.close();
    const late = await add('e');
    await drops.drop(late);
    expect(await dataOf('e')).toMatchObject({ inlineDropped: Buffer.byteLength(file, 'base64') });
    // A job without an inline file is left alone.
    await drops.drop(await (queue.add('load', { pipelineToken: 'f' }, { jobId: 'f' }) as Promise<Job>));
    expect(await dataOf('f')).toEqual({ pipelineToken: 'f' });
  });
});

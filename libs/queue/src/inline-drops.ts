import type { Job } from 'bullmq';
import type Redis from 'ioredis';
import { sideConnection } from '@tapyard/core';

/** How long a finished job's file may wait to be dropped with others' (one round trip for them all). */
export const INLINE_DROP_DELAY_MS = 50;

/** BullMQ's own updateData: the job's `data` replaced, only while the job's record exists. */
const DROP = `if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'data', ARGV[1]) end return 0`;

type Finished = Pick<Job, 'data' | 'id' | 'queueQualifiedName' | 'updateData'>;

/**
 * Drops the file a finished job (completed, or failed for good) carried inline from its record, keeping
 * its size: BullMQ keeps finished jobs for their ids (removeOnComplete, removeOnFail), and an upload's
 * bytes must not outlive its job in Redis, and Redis's snapshots, any more than a staged input outlives
 * it in the object store. The jobs that finish within INLINE_DROP_DELAY_MS go in one pipeline: a Redis
 * round trip per small job was a tenth of its worker's CPU. After close(), each job's goes at once.
 */
export class InlineDrops {
  private readonly pending = new Map<string, string>();
  private timer: NodeJS.Timeout | null = null;
  private redis: Redis | null = null;
  private closed = false;

  constructor(
    private readonly redisUrl: string,
    private readonly delayMs = INLINE_DROP_DELAY_MS,
  ) {}

  drop(job: Finished): Promise<void> {
    const data = job.data as { inline?: unknown } | null;
    if (data === null || typeof data !== 'object' || typeof data.inline !== 'string')
      return Promise.resolve();
    const { inline, ...rest } = data;
    const kept = { ...rest, inlineDropped: Buffer.byteLength(inline, 'base64') };
    // A job trimmed from the kept ones meanwhile has nothing left to drop.
    if (this.closed) return job.updateData(kept).catch(() => undefined);
    this.pending.set(`${job.queueQualifiedName}:${job.id}`, JSON.stringify(kept));
    this.timer ??= setTimeout(() => void this.flush(), this.delayMs);
    return Promise.resolve();
  }

  /** Sends what is pending now. */
  async flush(): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.pending.size === 0) return;
    const batch = [...this.pending];
    this.pending.clear();
    this.redis ??= sideConnection(this.redisUrl, 'inline-drops');
    const pipeline = this.redis.pipeline();
    for (const [key, data] of batch) pipeline.eval(DROP, 1, key, data);
    // Redis unreachable: the files stay until BullMQ trims their jobs, as they did when one call failed.
    await pipeline.exec().catch(() => undefined);
  }

  /** Sends what is pending and closes the connection; later drops go one by one on the job's own. */
  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
    this.redis?.disconnect();
    this.redis = null;
  }
}

import { TEST_OBJECT_STORE } from './env';
import { forceRemoveBucket, storeClient } from './minio-buckets';

/** Test environments' buckets (`t-<label>-<hex>-<purpose>`, see uniqueEnvironment). */
const TEST_BUCKET = /^t-[a-z0-9-]+-[a-z]+$/;
/** Older than any run: a run in another checkout sharing these peers is never swept under itself. */
const STALE_MS = 3 * 3600_000;

/**
 * Removes the buckets earlier test runs left in the shared object store. Every e2e suite makes a fresh
 * environment with its own buckets and nobody drops them; left to accumulate (tens of thousands on a
 * developer machine), they make every bucket listing and MinIO's background scanner slower, and with
 * them the whole suite. MinIO's force delete removes a bucket with its objects in one request.
 * Bounded in time: what is left goes on the next run.
 */
export async function sweepStaleTestBuckets({
  budgetMs = 60_000,
  olderThanMs = STALE_MS,
  matches = (name: string) => TEST_BUCKET.test(name),
}: { budgetMs?: number; olderThanMs?: number; matches?: (bucket: string) => boolean } = {}): Promise<{
  removed: number;
  left: number;
}> {
  const client = storeClient(TEST_OBJECT_STORE);
  const cutoff = Date.now() - olderThanMs;
  const stale = (await client.listBuckets())
    .filter((b) => matches(b.name) && b.creationDate.getTime() <= cutoff)
    .map((b) => b.name);
  const deadline = Date.now() + budgetMs;
  let removed = 0;
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < stale.length && Date.now() < deadline) {
        const bucketName = stale[next++];
        await forceRemoveBucket(client, bucketName).then(
          () => removed++,
          () => undefined,
        );
      }
    }),
  );
  return { removed, left: stale.length - removed };
}

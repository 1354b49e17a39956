import { Queue } from 'bullmq';
import { until } from './wait';

/**
 * A finished ingest job's record once its worker dropped the file it carried inline (InlineDrops: the
 * worker does it when BullMQ reports the job finished, a moment after its status says so).
 */
export async function droppedJob(queue: Queue, id: string): Promise<Record<string, unknown>> {
  let data: Record<string, unknown> = {};
  await until(
    `job ${id} without its inline file`,
    async () => {
      data = ((await queue.getJob(id))?.data ?? {}) as Record<string, unknown>;
      return data.inlineDropped !== undefined;
    },
    30_000,
  );
  return data;
}

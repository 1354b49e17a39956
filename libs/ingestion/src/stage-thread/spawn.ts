/** Starts a stage thread (see `spawnWorker` in `@tapyard/core` for how a `.ts` source runs). */
import { extname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { spawnWorker } from '@tapyard/core';

export function spawnStageThread(): Worker {
  return spawnWorker(join(__dirname, `thread-main${extname(__filename)}`));
}

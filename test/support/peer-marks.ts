import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** As long as the longest first install of a peer (Weaviate and helm build from source). */
const BOUND_MS = 20 * 60_000;

/**
 * Under `npm test` the e2e run starts while the services step still starts the optional peers (vector
 * stores, brokers, the chart's tools, chromium); scripts/test marks each `<peer>.starting` in
 * $TAPYARD_TEST_PEERS, renamed `<peer>` once started or failed. A file that needs one waits here for
 * that, so that it neither starts the peer a second time beside the step nor finds it missing; then it
 * asks `scripts/services up <peer>` as before (now instant, or failing with its own reason). A peer the
 * step does not start (pgvector, a core one), or a run outside `npm test`, has nothing to await.
 * Synchronous, like the callers that need a peer while a file loads.
 */
export function awaitPeerStarted(peer: string, boundMs = BOUND_MS): void {
  const dir = process.env.TAPYARD_TEST_PEERS;
  if (!dir) return;
  const starting = join(dir, `${peer}.starting`);
  const pause = new Int32Array(new SharedArrayBuffer(4));
  const deadline = Date.now() + boundMs;
  while (existsSync(starting)) {
    if (Date.now() > deadline)
      throw new Error(
        `${peer} was not started by npm test's services step within ${boundMs / 1000} s ` +
          `(scripts/services up ${peer}; its output follows the Jest runs)`,
      );
    Atomics.wait(pause, 0, 0, 200);
  }
}

/**
 * A thread of thread-probes.spec.ts: runs both probes, counting the processes this thread starts for
 * them, and answers what it found and how many it started.
 */
import childProcess from 'node:child_process';
import { parentPort, workerData } from 'node:worker_threads';
import { probeBwrap } from './bwrap-probe';
import { pythonLayout } from './python-layout';

const { bwrap, python } = (workerData as { data: { bwrap: string; python: string } }).data;
let started = 0;
// The probes call these through the module object, so the counters see every start.
for (const name of ['spawn', 'execFile'] as const) {
  const original = childProcess[name] as (...args: unknown[]) => unknown;
  (childProcess as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => {
    started += 1;
    return original(...args);
  };
}

void (async () => {
  const problem = await probeBwrap(bwrap, process.getuid?.() === 0);
  const layout = await pythonLayout(python).catch((err: Error) => ({ error: err.message }));
  parentPort?.postMessage({ problem, layout, started });
})();

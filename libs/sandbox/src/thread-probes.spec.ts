import { join } from 'node:path';
import { existsSync } from 'node:fs';
import type { Worker } from 'node:worker_threads';
import { spawnWorker } from '@tapyard/core';
import { resolveInterpreter } from './interpreter';
import { keepThreadProbes } from './thread-probes';

interface Answer {
  problem: string | null;
  layout: { basePrefix: string; executable: string } | { error: string };
  started: number;
}

const BWRAP = '/usr/bin/bwrap';

function probeInThread(data: { bwrap: string; python: string }): Promise<Answer> {
  const worker: Worker = spawnWorker(join(__dirname, 'thread-probes.spec-thread.ts'), { data });
  return new Promise((resolve, reject) => {
    worker.once('message', (answer: Answer) => void worker.terminate().then(() => resolve(answer)));
    worker.once('error', reject);
  });
}

describe('sandbox probes across threads', () => {
  let stop: () => void;
  beforeEach(() => (stop = keepThreadProbes()));
  afterEach(() => stop());

  (existsSync(BWRAP) ? it : it.skip)(
    'a thread started after another probed takes its findings and starts no process for them',
    async () => {
      const python = await resolveInterpreter(process.env.TAPYARD_SANDBOX_PYTHON ?? 'python3');
      const first = await probeInThread({ bwrap: BWRAP, python });
      expect(first.problem).toBeNull();
      expect(first.started).toBe(2); // bwrap, then the interpreter
      // The main thread hears of it asynchronously; the next thread is started once it has.
      let second = await probeInThread({ bwrap: BWRAP, python });
      for (let i = 0; i < 20 && second.started > 0; i++)
        second = await probeInThread({ bwrap: BWRAP, python });
      expect(second).toEqual({ problem: null, layout: first.layout, started: 0 });
      // Another interpreter path is probed by itself (findings are kept per path); bwrap is not again.
      const other = await probeInThread({ bwrap: BWRAP, python: `${python}-missing` });
      expect(other).toEqual({
        problem: null,
        layout: { error: expect.stringMatching(/cannot run the interpreter/) },
        started: 1,
      });
    },
  );

  it('does not pass on a failed probe: the next thread tries again', async () => {
    const python = await resolveInterpreter(process.env.TAPYARD_SANDBOX_PYTHON ?? 'python3');
    const missing = '/nonexistent/bwrap';
    const first = await probeInThread({ bwrap: missing, python });
    expect(first.problem).toMatch(/does not exist/);
    const second = await probeInThread({ bwrap: missing, python });
    expect(second.problem).toMatch(/does not exist/);
  });
});

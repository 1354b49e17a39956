import { join } from 'node:path';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
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
  let dir: string;
  beforeEach(() => {
    stop = keepThreadProbes();
    dir = mkdtempSync(join(tmpdir(), 'tapyard-probes-'));
  });
  afterEach(() => {
    stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * Paths no thread of this process probed before: findings are kept by path, and earlier test files
   * run in this process may have probed the usual ones.
   */
  const fresh = (target: string, name: string): string => {
    const path = join(dir, name);
    symlinkSync(target, path);
    return path;
  };

  (existsSync(BWRAP) ? it : it.skip)(
    'a thread started after another probed takes its findings and starts no process for them',
    async () => {
      const bwrap = fresh(BWRAP, 'bwrap');
      const python = fresh(
        await resolveInterpreter(process.env.TAPYARD_SANDBOX_PYTHON ?? 'python3'),
        'python3',
      );
      const first = await probeInThread({ bwrap, python });
      expect(first.problem).toBeNull();
      expect(first.started).toBe(2); // bwrap, then the interpreter
      // The main thread hears of it asynchronously; the next thread is started once it has.
      let second = await probeInThread({ bwrap, python });
      for (let i = 0; i < 20 && second.started > 0; i++) second = await probeInThread({ bwrap, python });
      expect(second).toEqual({ problem: null, layout: first.layout, started: 0 });
      // Another interpreter path is probed by itself (findings are kept per path); bwrap is not again.
      const other = await probeInThread({ bwrap, python: `${python}-missing` });
      expect(other).toEqual({
        problem: null,
        layout: { error: expect.stringMatching(/cannot run the interpreter/) },
        started: 1,
      });
    },
  );

  it('does not pass on a failed probe: the next thread tries again', async () => {
    const python = await resolveInterpreter(process.env.TAPYARD_SANDBOX_PYTHON ?? 'python3');
    const missing = join(dir, 'no-bwrap');
    const first = await probeInThread({ bwrap: missing, python });
    expect(first.problem).toMatch(/does not exist/);
    const second = await probeInThread({ bwrap: missing, python });
    expect(second.problem).toMatch(/does not exist/);
  });
});

import { spawn } from 'node:child_process';
import { join } from 'node:path';

/**
 * Test files ask scripts/services for a peer at once (each Jest worker its own), and each `up` sets the
 * peer's roles up again: two concurrent ALTER ROLEs failed one of them ("tuple concurrently updated"),
 * and with it the test file that asked.
 */
describe('scripts/services up, run at once by several callers', () => {
  const services = join(__dirname, '..', 'scripts', 'services');

  const up = (peer: string): Promise<{ code: number | null; stderr: string }> =>
    new Promise((resolve) => {
      const child = spawn('bash', [services, 'up', peer], { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.on('close', (code) => resolve({ code, stderr }));
    });

  it.each(['pgvector', 'postgres'])(
    '%s: every caller succeeds',
    async (peer) => {
      const runs = await Promise.all(Array.from({ length: 6 }, () => up(peer)));
      for (const r of runs) {
        expect(r.stderr).not.toMatch(/ERROR/);
        expect(r.code).toBe(0);
      }
    },
    120_000,
  );
});

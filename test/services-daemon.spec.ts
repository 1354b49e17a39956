import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * scripts/services starts each peer as a daemon that outlives the command: it must not keep the caller's
 * open files, or `flock bench.lock npm run bench:...` starting a peer held the lock for as long as the peer ran.
 */
describe('a peer started by scripts/services', () => {
  const services = join(__dirname, '..', 'scripts', 'services');
  let home: string;
  let pid: number | undefined;
  beforeEach(() => (home = mkdtempSync(join(tmpdir(), 'tapyard-daemon-'))));
  afterEach(() => {
    if (pid) process.kill(pid);
    rmSync(home, { recursive: true, force: true });
  });

  it('leaves a lock its caller held free once the caller is done', () => {
    const lock = join(home, 'bench.lock');
    const started = spawnSync(
      'flock',
      [lock, 'bash', '-c', `. '${services}'; start_daemon peer "$TAPYARD_HOME/peer.log" sleep 120`],
      { env: { ...process.env, TAPYARD_HOME: home }, encoding: 'utf8' },
    );
    expect(started.status).toBe(0);
    pid = Number(readFileSync(join(home, 'peer.pid'), 'utf8'));
    expect(() => process.kill(pid!, 0)).not.toThrow();
    // -n: fails at once instead of waiting while someone holds it.
    expect(spawnSync('flock', ['-n', lock, 'true']).status).toBe(0);
  });
});

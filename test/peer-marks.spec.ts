import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { awaitPeerStarted } from './support/peer-marks';

describe("a file's wait for an optional peer npm test's services step is starting", () => {
  let dir: string;
  const before = process.env.TAPYARD_TEST_PEERS;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'tapyard-peer-marks-'));
    process.env.TAPYARD_TEST_PEERS = dir;
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
    if (before === undefined) delete process.env.TAPYARD_TEST_PEERS;
    else process.env.TAPYARD_TEST_PEERS = before;
  });

  it('returns once the step has marked the peer started, not before', () => {
    writeFileSync(join(dir, 'kafka.starting'), '');
    // Another process plays the services step: this one blocks while it waits.
    spawn('sh', ['-c', 'sleep 0.5; mv kafka.starting kafka'], { cwd: dir, stdio: 'ignore' });
    awaitPeerStarted('kafka');
    expect(existsSync(join(dir, 'kafka'))).toBe(true);
  });

  it('does not wait for a peer the step does not start', () => {
    awaitPeerStarted('pgvector', 0);
  });

  it('fails naming the peer once the bound is past', () => {
    writeFileSync(join(dir, 'weaviate.starting'), '');
    expect(() => awaitPeerStarted('weaviate', 300)).toThrow(
      /^weaviate was not started by npm test's services step within 0.3 s \(scripts\/services up weaviate/,
    );
  });
});

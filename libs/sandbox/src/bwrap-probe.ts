import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Writable } from 'node:stream';
import { MountPlan, namespaceArgs } from './bwrap';
import { userNamespaceFilter } from './seccomp';
import { inherited, share } from './thread-probes';

const PROBE_TIMEOUT_MS = 10_000;
const probes = new Map<string, Promise<string | null>>();

/**
 * Whether bwrap works here with the namespaces a run uses. Resolves to null when usable, else
 * to the reason; cached per binary and privilege, since neither changes while we run. A thread started
 * after another found it usable takes that answer (thread-probes.ts); a reason is not passed on, so a
 * probe that failed once (a timeout on a busy host) is tried again by the next thread.
 */
export function probeBwrap(bwrapPath: string, privileged: boolean): Promise<string | null> {
  const key = `${bwrapPath}\0${privileged}`;
  let probe = probes.get(key);
  if (!probe) {
    probe =
      inherited('bwrap', key) === true
        ? Promise.resolve(null)
        : runProbe(bwrapPath, privileged).then((problem) => {
            if (problem === null) share('bwrap', key, true);
            return problem;
          });
    probes.set(key, probe);
  }
  return probe;
}

/** Probes with the features runs rely on: private sized /tmp and a seccomp filter on fd 3. */
function runProbe(bwrapPath: string, privileged: boolean): Promise<string | null> {
  if (!existsSync(bwrapPath)) return Promise.resolve(`${bwrapPath} does not exist`);
  const mounts = new MountPlan();
  mounts.system();
  const filter = userNamespaceFilter();
  const args = [...namespaceArgs(privileged), ...mounts.args, '--proc', '/proc', '--dev', '/dev'];
  args.push('--perms', '1777', '--size', String(1024 * 1024), '--tmpfs', '/tmp');
  if (filter) args.push('--seccomp', '3');
  return new Promise((resolvePromise) => {
    const child = spawn(bwrapPath, [...args, '--', 'true'], {
      env: { PATH: '/usr/bin:/bin' },
      stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
      timeout: PROBE_TIMEOUT_MS,
    });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const seccompPipe = child.stdio[3];
    if (seccompPipe instanceof Writable) {
      seccompPipe.on('error', () => undefined);
      seccompPipe.end(filter ?? Buffer.alloc(0));
    }
    child.once('error', (err) => resolvePromise(err.message));
    child.once('close', (code, signal) => {
      if (code === 0) return resolvePromise(null);
      resolvePromise(stderr.trim().split('\n')[0] || `bwrap exited with ${code ?? signal}`);
    });
  });
}

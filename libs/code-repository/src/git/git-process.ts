import { spawn } from 'node:child_process';

export interface GitRun {
  args: readonly string[];
  env: NodeJS.ProcessEnv;
  input?: string;
  timeoutMs: number;
  /** Beyond this much stdout the command is killed: a reply that big is not one we asked for. */
  maxStdout: number;
}

export interface GitResult {
  code: number | null;
  stdout: Buffer;
  /** The tail only: enough to classify the failure, never shown as such. */
  stderr: string;
  timedOut: boolean;
  overflow: boolean;
  /** Set when git could not be started at all (not installed, cwd gone). */
  spawnError: string | null;
}

const STDERR_TAIL_BYTES = 16 * 1024;

/** Runs `git` with an argument array (no shell) and kills its whole process group on the deadline. */
export function runGit(run: GitRun): Promise<GitResult> {
  return new Promise((resolve) => {
    // A process group of its own: fetch and push start helpers (git-remote-http, index-pack) that a
    // kill of git alone would leave running past the deadline.
    const child = spawn('git', [...run.args], {
      env: run.env,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    const out: Buffer[] = [];
    let outBytes = 0;
    let err = Buffer.alloc(0);
    let timedOut = false;
    let overflow = false;
    let settled = false;
    const killGroup = (): void => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, run.timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes > run.maxStdout) {
        overflow = true;
        killGroup();
        return;
      }
      out.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err = Buffer.concat([err, chunk]);
      if (err.length > STDERR_TAIL_BYTES) err = err.subarray(err.length - STDERR_TAIL_BYTES);
    });
    const finish = (code: number | null, spawnError: string | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({
        code,
        stdout: Buffer.concat(out),
        stderr: err.toString('utf8'),
        timedOut,
        overflow,
        spawnError,
      });
    };
    child.once('error', (e) => finish(null, e.message));
    child.once('close', (code) => finish(code, null));
    // git may exit before reading its input (a failure); that EPIPE is reported through its exit code.
    child.stdin.on('error', () => undefined);
    child.stdin.end(run.input ?? '');
  });
}

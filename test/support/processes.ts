import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

export interface Spawned {
  child: ChildProcess;
  output(): string;
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>;
  exited: Promise<number | null>;
  /** A worker's operations port, from its `worker http listening on` line. */
  httpPort(): Promise<number>;
}

/**
 * Runs a built app (`npm run build` first; `npm test` does) as its own process. Workers get an
 * ephemeral operations port unless the test names one: tests run several workers at once.
 * `nodeArgs` go to node before the entry point (a `--require` preload that observes the process).
 */
export function spawnApp(
  app: 'api' | 'worker',
  env: Record<string, string | undefined>,
  nodeArgs: string[] = [],
): Spawned {
  const ports = app === 'worker' && !('WORKER_HTTP_PORT' in env) ? { WORKER_HTTP_PORT: '0' } : {};
  const entry = join(ROOT, 'dist', 'apps', app, 'src', 'main.js');
  const child = spawn(process.execPath, [...nodeArgs, entry], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...ports, ...env } as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const waitFor = async (pattern: RegExp, timeoutMs = 120_000) => {
    const start = Date.now();
    while (!pattern.test(out)) {
      if (child.exitCode !== null)
        throw new Error(`${app} exited (${child.exitCode}) before ${pattern}:\n${out}`);
      if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${pattern}:\n${out}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const listening = /worker http listening on [^\s"]+:(\d+)/;
  return {
    child,
    output: () => out,
    exited,
    waitFor,
    httpPort: async () => {
      await waitFor(listening);
      return Number(listening.exec(out)?.[1]);
    },
  };
}

import { ChildProcess, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { connect } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The FerretDB binary scripts/services built. */
const BINARY = join(process.env.TAPYARD_HOME ?? join(homedir(), '.cache', 'tapyard'), 'bin', 'ferretdb');

/** A private FerretDB a test may stop and start (the shared one serves every other suite). */
export class PrivateFerretDb {
  private child: ChildProcess | null = null;

  constructor(
    readonly port: number,
    private readonly dir: string,
  ) {
    mkdirSync(join(dir, 'data'), { recursive: true });
  }

  get uri(): string {
    return `mongodb://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.child = spawn(
      BINARY,
      [
        '--handler=sqlite',
        `--sqlite-url=file:${join(this.dir, 'data')}/`,
        `--listen-addr=127.0.0.1:${this.port}`,
        '--debug-addr=-',
        `--state-dir=${this.dir}`,
        '--telemetry=disable',
        '--log-level=ERROR',
      ],
      { stdio: 'ignore' },
    );
    for (let i = 0; i < 100; i++) {
      if (await answers(this.port)) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`ferretdb did not start on ${this.port}`);
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
    this.child = null;
  }
}

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chown, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { closedPort } from './net';

const run = promisify(execFile);

/** A PostgreSQL server of a test's own, on loopback, with the settings the test needs. */
export interface PrivatePostgres {
  /** The superuser's URL of `database` on this server. */
  url(database: string): string;
  stop(): Promise<void>;
}

/**
 * Starts a throwaway server (initdb in a temporary directory) for a setting the shared one of
 * scripts/services does not have, e.g. `max_prepared_transactions`. Run as root, the server runs
 * as the `postgres` user, as PostgreSQL requires.
 */
export async function startPrivatePostgres(settings: Record<string, string>): Promise<PrivatePostgres> {
  const versions = (await readdir('/usr/lib/postgresql')).sort((a, b) => Number(a) - Number(b));
  const bin = join('/usr/lib/postgresql', versions[versions.length - 1], 'bin');
  const dir = await mkdtemp(join(tmpdir(), 'tapyard-pg-'));
  const asRoot = process.getuid?.() === 0;
  const as = (cmd: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args]) : run(join(bin, cmd), args);
  const password = randomBytes(12).toString('hex');
  await writeFile(join(dir, 'pw'), password);
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const uid = Number(stdout.trim());
    await chown(dir, uid, uid);
    await chown(join(dir, 'pw'), uid, uid);
  }
  const data = join(dir, 'data');
  await as('initdb', [
    '-D',
    data,
    '-U',
    'postgres',
    `--pwfile=${join(dir, 'pw')}`,
    '--auth-local=peer',
    '--auth-host=scram-sha-256',
    '-E',
    'UTF8',
    '--locale=C',
  ]);
  const port = await closedPort();
  const options = Object.entries({
    listen_addresses: '127.0.0.1',
    port: String(port),
    unix_socket_directories: dir,
    fsync: 'off',
    ...settings,
  })
    .map(([k, v]) => `-c ${k}=${v}`)
    .join(' ');
  await as('pg_ctl', ['-D', data, '-l', join(dir, 'server.log'), '-w', '-t', '60', '-o', options, 'start']);
  return {
    url: (database) => `postgres://postgres:${password}@127.0.0.1:${port}/${database}`,
    stop: async () => {
      await as('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

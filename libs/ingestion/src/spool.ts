import { Inject, Injectable } from '@nestjs/common';
import { createReadStream, createWriteStream, ReadStream, WriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import { CONFIG, TapyardConfig } from '@tapyard/core';

/**
 * Uploaded files wait here for a worker. Files are named by pipeline token, under the environment,
 * so nothing a client sends becomes part of a path. The spool is a local directory: API and
 * workers must share it (one host, or a shared volume) for uncompressed uploads; archives travel
 * through the object store's raw bucket instead.
 */
@Injectable()
export class Spool {
  private readonly root: string;

  constructor(@Inject(CONFIG) config: TapyardConfig) {
    this.root = resolve(config.spoolDir);
  }

  async create(environment: string, name: string): Promise<{ path: string; stream: WriteStream }> {
    const dir = join(this.root, environment);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const path = join(dir, name);
    return { path, stream: createWriteStream(path, { mode: 0o600 }) };
  }

  /** A path in the environment's spool directory, for files that arrive by rename. */
  pathFor(environment: string, name: string): string {
    return join(this.root, environment, name);
  }

  open(path: string): ReadStream {
    return createReadStream(this.checked(path), { highWaterMark: 1 << 20 });
  }

  /** Removes a spool file and the stream state a tap run may have left beside it. */
  async remove(path: string): Promise<void> {
    await rm(this.checked(path), { force: true });
    await rm(`${this.checked(path)}.state`, { force: true });
  }

  private checked(path: string): string {
    const p = resolve(path);
    if (!p.startsWith(this.root + sep)) throw new Error('path outside the spool directory');
    return p;
  }
}

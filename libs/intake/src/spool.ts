import { Inject, Injectable } from '@nestjs/common';
import { mkdir, rm } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import { CONFIG, TapyardConfig } from '@tapyard/core';

/** A spool name: a token the platform made (a UUID, maybe with a suffix), never a client's file name. */
const SPOOL_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}(\.[a-z]{1,16})?$/;

/**
 * This host's own scratch directory: a job's rejects, a document for its parser, archive
 * extraction. Never shared between hosts. Files are named by platform tokens
 * under the environment, so nothing a client sends becomes part of a path: both segments are
 * checked against a token pattern and the result against the spool root.
 */
@Injectable()
export class Spool {
  private readonly root: string;

  constructor(@Inject(CONFIG) config: TapyardConfig) {
    this.root = resolve(config.spoolDir);
  }

  /** The path of a new spool file, its directory made. */
  async reserve(environment: string, name: string): Promise<string> {
    const path = this.pathFor(environment, name);
    await mkdir(join(this.root, environment), { recursive: true, mode: 0o700 });
    return path;
  }

  /** A path in the environment's spool directory, for files that arrive by rename. */
  pathFor(environment: string, name: string): string {
    if (!SPOOL_NAME.test(environment) || !SPOOL_NAME.test(name)) {
      throw new Error(`not a spool name: ${JSON.stringify(`${environment}/${name}`.slice(0, 80))}`);
    }
    return this.checked(join(this.root, environment, name));
  }

  async remove(path: string): Promise<void> {
    await rm(this.checked(path), { force: true });
  }

  private checked(path: string): string {
    const p = resolve(path);
    if (!p.startsWith(this.root + sep)) throw new Error('path outside the spool directory');
    return p;
  }
}

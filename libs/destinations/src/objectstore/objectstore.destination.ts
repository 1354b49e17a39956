import { Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ServiceUnavailableError, ValidationError, errorMessage } from '@tapyard/core';
import { ObjectNotFoundError, ObjectStore } from '@tapyard/objectstore';
import { ObjectStoreDestination as Target, PipelineDefinition } from '@tapyard/model';
import {
  Destination,
  DropOutcome,
  LoadResult,
  LoadTarget,
  Payload,
  RejectedRow,
  writeModeOf,
} from '../destination';
import { CreatedObject, CreatedObjects } from '../ownership/created-objects';
import { writeRowFile } from '../typed-rows';
import { endFile, localFile, write } from './file-writers';
import { DestinationErrorCode } from '../destination-errors';

const EXTENSIONS = { parquet: 'parquet', csv: 'csv', jsonl: 'jsonl' } as const;

/** `<prefix>/_LATEST`: which job folder holds the current version of a `replace` pipeline's data. */
export const LATEST = '_LATEST';

/** The content of `_LATEST`. */
export interface LatestVersion {
  pipelineToken: string;
  /** The job folder, relative to the prefix: `job=<pipelineToken>/`. */
  folder: string;
}

/**
 * Writes loaded rows as files under `<bucket>/<prefix>/job=<pipelineToken>/`: `part-00000.<format>`,
 * `_rejects.jsonl` when rows were rejected, and `_SUCCESS` last. Exactly-once effect: every key is
 * fixed by the job, so a redelivery overwrites the same objects (an S3 PUT is atomic), and a job whose
 * `_SUCCESS` exists writes nothing. Keeps the spec's process name (no Spark is involved).
 * `replace` makes each job a new version of the data: once its files are up, `<prefix>/_LATEST` names
 * its folder (one PUT, so readers that follow it see the old version or the new, whole); `_SUCCESS`
 * comes after it, so a delivery that died in between writes both again.
 */
@Injectable()
export class ObjectStoreDestination implements Destination {
  readonly name = 'objectstore';
  readonly processName = 'SparkObjectStoreLoader' as const;
  readonly capabilities = {
    exactlyOnce: true,
    schemaEvolution: true,
    maxBatchRows: null,
    csvPassThrough: false,
    retractable: true,
  };
  readonly encoder = 'typed';

  constructor(
    private readonly store: ObjectStore,
    private readonly ownership: CreatedObjects,
  ) {}

  selects(destination: PipelineDefinition['destination']): boolean {
    return destination.objectStore !== undefined;
  }

  describe(destination: PipelineDefinition['destination']): string {
    const os = targetOf(destination);
    return `${os.bucket ?? 'the output bucket'}/${os.prefix} (${os.format})`;
  }

  async probe(): Promise<void> {
    await this.store.probe();
  }

  async committed(target: LoadTarget): Promise<LoadResult | null> {
    const bucket = await this.bucketOf(target.destination, target.environment);
    const dir = `${targetOf(target.destination).prefix}/job=${target.pipelineToken}`;
    const done = await this.readSuccess(bucket, `${dir}/_SUCCESS`);
    const location = `s3://${bucket}/${dir}/`;
    return done
      ? { ...done, alreadyLoaded: true, location, rejectsLocation: `${location}_rejects.jsonl` }
      : null;
  }

  /** Nothing pre-exists here: every job writes into a folder named after its own token. */
  locations(): [] {
    return [];
  }

  async prepare(target: LoadTarget): Promise<void> {
    await this.bucketOf(target.destination, target.environment);
  }

  async load(
    target: LoadTarget,
    payloads: AsyncIterable<Payload>,
    rejects: () => AsyncIterable<RejectedRow>,
    progress: (rowsSoFar: number) => void,
  ): Promise<LoadResult> {
    const os = targetOf(target.destination);
    const bucket = await this.bucketOf(target.destination, target.environment);
    const dir = `${os.prefix}/job=${target.pipelineToken}`;
    const location = `s3://${bucket}/${dir}/`;
    const done = await this.readSuccess(bucket, `${dir}/_SUCCESS`);
    if (done) {
      for await (const _ of payloads); // drain the reader so its temporary files are closed
      return { ...done, alreadyLoaded: true, location, rejectsLocation: `${location}_rejects.jsonl` };
    }
    // The job folder is recorded as this pipeline's before anything is written, in a claim held for
    // the whole write (a delete waits for it); the record is kept even when writing fails midway,
    // since some files may exist.
    let failure: unknown = null;
    const result = await this.ownership.claim(target.environment, target.pipeline, async (record) => {
      await record({ store: 'objectstore', bucket, prefix: `${dir}/` }, `job:${target.pipelineToken}`);
      if (writeModeOf(target) === 'replace') {
        // Recorded too, so a delete with data takes the pointer along with the folders.
        const latest = `${os.prefix}/${LATEST}`;
        const id = createHash('sha256')
          .update(JSON.stringify([target.environment, target.pipeline, bucket, latest]))
          .digest('hex');
        await record({ store: 'objectstore', bucket, prefix: latest }, `latest:${id.slice(0, 32)}`);
      }
      return this.write(bucket, dir, os, target, payloads, rejects, progress).catch((err: unknown) => {
        failure = err;
        return null;
      });
    });
    if (result === null) throw failure;
    return { ...result, alreadyLoaded: false, location, rejectsLocation: `${location}_rejects.jsonl` };
  }

  private async write(
    bucket: string,
    dir: string,
    os: Target,
    target: LoadTarget,
    payloads: AsyncIterable<Payload>,
    rejects: () => AsyncIterable<RejectedRow>,
    progress: (rowsSoFar: number) => void,
  ): Promise<{ loaded: number; rejected: number }> {
    const work = await mkdtemp(join(tmpdir(), 'tapyard-objectstore-'));
    try {
      const part = join(work, `part.${EXTENSIONS[os.format]}`);
      const rejectsFile = join(work, '_rejects.jsonl');
      // Rejected rows go to a local file as they come, then up with the part: memory stays flat.
      const rejectsOut = localFile(rejectsFile);
      let rejected = 0;
      const reject = async (r: RejectedRow) => {
        rejected++;
        await write(rejectsOut, JSON.stringify(r) + '\n');
      };
      const loaded = await writeRowFile(
        os.format,
        part,
        target,
        payloads,
        progress,
        'SparkObjectStoreLoader',
        reject,
      );
      await this.store.putFile(bucket, `${dir}/part-00000.${EXTENSIONS[os.format]}`, part);
      for await (const r of rejects()) await reject(r);
      await endFile(rejectsOut);
      if (rejected > 0) await this.store.putFile(bucket, `${dir}/_rejects.jsonl`, rejectsFile);
      // A job that writes no row fails: it does not become the current version.
      if (writeModeOf(target) === 'replace' && loaded > 0) {
        const latest: LatestVersion = {
          pipelineToken: target.pipelineToken,
          folder: `job=${target.pipelineToken}/`,
        };
        await this.store.put(
          bucket,
          `${os.prefix}/${LATEST}`,
          Buffer.from(JSON.stringify(latest)),
          'application/json',
        );
      }
      const result = { loaded, rejected };
      await this.store.put(
        bucket,
        `${dir}/_SUCCESS`,
        Buffer.from(JSON.stringify(result)),
        'application/json',
      );
      return result;
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  /**
   * Removes the job's folder; returns the rows its `_SUCCESS` counted. A `_LATEST` naming it goes too:
   * there is no current version until the next replace.
   */
  async removeRows(target: LoadTarget): Promise<number> {
    const os = targetOf(target.destination);
    const bucket = await this.bucketOf(target.destination, target.environment);
    const dir = `${os.prefix}/job=${target.pipelineToken}`;
    const done = await this.readSuccess(bucket, `${dir}/_SUCCESS`);
    const latest = await this.store.readText(bucket, `${os.prefix}/${LATEST}`, 4096).then(
      (text) => JSON.parse(text) as LatestVersion,
      (err: unknown) => {
        if (err instanceof ObjectNotFoundError) return null;
        throw err;
      },
    );
    if (latest?.pipelineToken === target.pipelineToken)
      await this.store.remove(bucket, `${os.prefix}/${LATEST}`);
    // _SUCCESS last: a removal that fails midway is repeated, and still finds the count.
    const files = (await this.store.list(bucket, `${dir}/`)).sort(
      (a, b) => Number(a.key.endsWith('/_SUCCESS')) - Number(b.key.endsWith('/_SUCCESS')),
    );
    for (const f of files) await this.store.remove(bucket, f.key);
    return done?.loaded ?? 0;
  }

  /** Removes the files of each job folder the pipeline recorded. */
  async drop(objects: CreatedObject[]): Promise<DropOutcome[]> {
    const outcomes: DropOutcome[] = [];
    for (const o of objects) {
      if (o.store !== 'objectstore') continue;
      const found = await this.store.list(o.bucket, o.prefix);
      for (const f of found) await this.store.remove(o.bucket, f.key);
      outcomes.push(
        found.length > 0
          ? { object: o, dropped: true }
          : { object: o, dropped: false, reason: 'holds no files' },
      );
    }
    return outcomes;
  }

  private async bucketOf(
    destination: PipelineDefinition['destination'],
    environment: string,
  ): Promise<string> {
    const os = targetOf(destination);
    return os.bucket ?? this.store.bucket(environment, 'output');
  }

  private async readSuccess(
    bucket: string,
    key: string,
  ): Promise<{ loaded: number; rejected: number } | null> {
    try {
      return JSON.parse(await this.store.readText(bucket, key, 4096)) as { loaded: number; rejected: number };
    } catch (err) {
      if (err instanceof ObjectNotFoundError) return null;
      // Kept as it is: an unreachable store is retried, a plain Error would end the job for good.
      if (err instanceof ServiceUnavailableError) throw err;
      throw new Error(`cannot read ${key}: ${errorMessage(err)}`, { cause: err });
    }
  }
}

function targetOf(destination: PipelineDefinition['destination']): Target {
  if (!destination.objectStore)
    throw new ValidationError('the pipeline has no destination.objectStore').coded(
      DestinationErrorCode.MissingSection,
    );
  return destination.objectStore;
}

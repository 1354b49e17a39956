import { Injectable } from '@nestjs/common';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ValidationError, errorMessage } from '@tapyard/core';
import { ObjectNotFoundError, ObjectStore } from '@tapyard/objectstore';
import { ObjectStoreDestination as Target, PipelineDefinition } from '@tapyard/pipelines';
import { parseCopyLine } from '../copy-text';
import { Destination, DropOutcome, LoadResult, LoadTarget, RejectedRow } from '../destination';
import { CreatedObject, CreatedObjects } from '../ownership/created-objects';
import { typedValue } from '../typed-values';
import { openRowWriter } from './file-writers';

const EXTENSIONS = { parquet: 'parquet', csv: 'csv', jsonl: 'jsonl' } as const;

/**
 * Writes loaded rows as files under `<bucket>/<prefix>/job=<pipelineToken>/`: `part-00000.<format>`,
 * `_rejects.jsonl` when rows were rejected, and `_SUCCESS` last. Exactly-once effect: every key is
 * fixed by the job, so a redelivery overwrites the same objects (an S3 PUT is atomic), and a job whose
 * `_SUCCESS` exists writes nothing. Keeps the spec's process name (no Spark is involved).
 */
@Injectable()
export class ObjectStoreDestination implements Destination {
  readonly name = 'objectstore';
  readonly processName = 'SparkObjectStoreLoader' as const;
  readonly capabilities = { exactlyOnce: true, schemaEvolution: true };

  constructor(
    private readonly store: ObjectStore,
    private readonly ownership: CreatedObjects,
  ) {}

  /** Nothing pre-exists here: every job writes into a folder named after its own token. */
  locations(): [] {
    return [];
  }

  async prepare(target: LoadTarget): Promise<void> {
    await this.bucketOf(target.destination, target.environment);
  }

  async load(
    target: LoadTarget,
    chunks: AsyncIterable<string>,
    rejects: () => AsyncIterable<RejectedRow>,
    progress: (rowsSoFar: number) => void,
  ): Promise<LoadResult> {
    const os = targetOf(target.destination);
    const bucket = await this.bucketOf(target.destination, target.environment);
    const dir = `${os.prefix}/job=${target.pipelineToken}`;
    const location = `s3://${bucket}/${dir}/`;
    const done = await this.readSuccess(bucket, `${dir}/_SUCCESS`);
    if (done) {
      for await (const _ of chunks); // drain the reader so its temporary files are closed
      return { ...done, alreadyLoaded: true, location };
    }
    // The job folder is recorded as this pipeline's before anything is written, in a claim held for
    // the whole write (a delete waits for it); the record is kept even when writing fails midway,
    // since some files may exist.
    let failure: unknown = null;
    const result = await this.ownership.claim(target.environment, target.pipeline, async (record) => {
      await record({ store: 'objectstore', bucket, prefix: `${dir}/` }, `job:${target.pipelineToken}`);
      return this.write(bucket, dir, os, target, chunks, rejects, progress).catch((err: unknown) => {
        failure = err;
        return null;
      });
    });
    if (result === null) throw failure;
    return { ...result, alreadyLoaded: false, location };
  }

  private async write(
    bucket: string,
    dir: string,
    os: Target,
    target: LoadTarget,
    chunks: AsyncIterable<string>,
    rejects: () => AsyncIterable<RejectedRow>,
    progress: (rowsSoFar: number) => void,
  ): Promise<{ loaded: number; rejected: number }> {
    const work = await mkdtemp(join(tmpdir(), 'tapyard-objectstore-'));
    try {
      const part = join(work, `part.${EXTENSIONS[os.format]}`);
      const parse = target.columns.map((c) => typedValue(c.type));
      const writer = await openRowWriter(os.format, part, target.columns);
      let loaded = 0;
      const refused: RejectedRow[] = [];
      try {
        for await (const chunk of chunks) {
          for (const line of chunk.split('\n')) {
            if (line === '') continue;
            const row = parseCopyLine(line).map((v, i) => (v === null ? null : parse[i](v)));
            // The Parquet writer encodes INT64 through doubles: refuse what it would round, never round it.
            const unsafe = os.format === 'parquet' ? row.findIndex((v) => typeof v === 'bigint') : -1;
            if (unsafe >= 0) {
              refused.push({
                line: 0,
                stage: 'SparkObjectStoreLoader',
                reason: `${target.columns[unsafe].name}: ${String(row[unsafe])} is beyond ±2^53, which the Parquet writer cannot store exactly`,
                raw: line.slice(0, 1000),
              });
              continue;
            }
            await writer.write(row);
            loaded++;
          }
          progress(loaded);
        }
      } finally {
        await writer.close();
      }
      await this.store.putFile(bucket, `${dir}/part-00000.${EXTENSIONS[os.format]}`, part);
      let rejected = 0;
      const lines: string[] = [];
      for await (const r of rejects()) {
        rejected++;
        lines.push(JSON.stringify(r));
      }
      for (const r of refused) {
        rejected++;
        lines.push(JSON.stringify(r));
      }
      if (rejected > 0) {
        await this.store.put(
          bucket,
          `${dir}/_rejects.jsonl`,
          Buffer.from(lines.join('\n') + '\n'),
          'application/x-ndjson',
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

  /** Removes the files of each job folder the pipeline recorded. */
  async dropCreated(objects: CreatedObject[]): Promise<DropOutcome[]> {
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
      throw new Error(`cannot read ${key}: ${errorMessage(err)}`, { cause: err });
    }
  }
}

function targetOf(destination: PipelineDefinition['destination']): Target {
  if (!destination.objectStore) throw new ValidationError('the pipeline has no destination.objectStore');
  return destination.objectStore;
}

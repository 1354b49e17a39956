import { Injectable } from '@nestjs/common';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ValidationError, errorMessage } from '@tapyard/core';
import { ObjectNotFoundError, ObjectStore } from '@tapyard/objectstore';
import { ObjectStoreDestination as Target, PipelineDefinition } from '@tapyard/pipelines';
import { parseCopyLine } from '../copy-text';
import { Destination, LoadResult, LoadTarget, RejectedRow } from '../destination';
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

  constructor(private readonly store: ObjectStore) {}

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
      return { ...result, alreadyLoaded: false, location };
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  /** Removes every object under the prefix. */
  async drop(destination: PipelineDefinition['destination'], environment: string): Promise<void> {
    const bucket = await this.bucketOf(destination, environment);
    for (const o of await this.store.list(bucket, `${targetOf(destination).prefix}/`)) {
      await this.store.remove(bucket, o.key);
    }
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

import { Inject, Injectable } from '@nestjs/common';
import { Logger } from 'pino';
import { CONFIG, LOGGER, TapyardConfig } from '@tapyard/core';
import { Destination, LoadResult, TargetShape } from '@tapyard/destinations';
import { RetryLaterError } from '@tapyard/queue';
import { JobEvents, ProcessName } from '@tapyard/status';
import { PipelineDefinition } from '@tapyard/model';
import { StageError } from './stage-error';
import { JobScript } from './job-scripts';
import { Counts } from './stage-thread/protocol';

/**
 * How long a small job's begin entries wait to go with its end: under a load of small uploads a job
 * takes tens of milliseconds, and a status reader sees a longer one's entries this much later.
 */
export const BEGIN_LINGER_MS = 200;

/** One destination of a job, and how its load went. */
export interface Leg {
  destination: Destination;
  result: LoadResult | null;
  error: StageError | null;
  /** What the destination's preparation read of its target, for its encoder (null: nothing). */
  shape: TargetShape | null;
}

/**
 * What a job reports as it loads and when it ends: each stage's begin entry, the checking stages'
 * end entries, the loaders' progress entries, each loader's end or error, a retry when every failure
 * can be retried exactly once, and the job's one terminal event (success, warning, or error when
 * nothing usable loaded) with its row counts.
 */
@Injectable()
export class JobOutcome {
  constructor(
    @Inject(CONFIG) private readonly config: TapyardConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /**
   * Writes each destination's outcome and the job's: `success` (or `warning` with rejects, or with a
   * schema contract `note`) when every destination loaded, `warning` when some did, `error` when none
   * did. A destination that was unreachable and is exactly-once makes the job run again while
   * deliveries remain. The loaders' end entries and the job's end are written in one round trip.
   */
  async finish(
    events: JobEvents,
    legs: Leg[],
    counts: Counts | null,
    note: string | null,
    attempt: { made: number; max: number },
  ): Promise<void> {
    const failed = legs.filter((l) => l.error !== null);
    const retry =
      failed.length > 0 &&
      attempt.made + 1 < attempt.max &&
      failed.every((l) => l.error?.retryable && l.destination.capabilities.exactlyOnce);
    for (const leg of legs) {
      const d = leg.destination;
      if (leg.result !== null) {
        const r = leg.result;
        events.add(
          d.processName,
          'end',
          r.alreadyLoaded
            ? `already loaded by an earlier delivery: ${r.loaded} rows in ${r.location}`
            : `loaded ${r.loaded} rows into ${r.location}` +
                (r.rejected > 0
                  ? `; ${r.rejected} rejected rows kept in ${r.rejectsLocation ?? `${r.location}_rejects`}`
                  : ''),
        );
      } else if (leg.error !== null && retry) {
        events.add(
          d.processName,
          'processing',
          `${leg.error.message}; will retry (delivery ${attempt.made + 1} of ${attempt.max})`,
        );
      }
    }
    if (retry) {
      await events.flush();
      throw new RetryLaterError(failed.map((l) => l.error?.message).join('; '));
    }
    const loaded = legs.filter((l) => l.result !== null);
    for (const [k, leg] of failed.entries()) {
      const e = leg.error as StageError;
      // When nothing loaded anywhere, the last failure is the job's terminal event (its lastError).
      const last = loaded.length === 0 && k === failed.length - 1;
      this.logger.warn(
        { pipelineToken: events.job.pipelineToken, processName: e.processName, err: e.message },
        'load failed',
      );
      await events.record(e.processName, 'error', e.message, last ? 'error' : 'processing');
    }
    if (loaded.length === 0) return events.flush();
    const first = loaded[0].result as LoadResult;
    if (first.loaded === 0 && first.rejected > 0) {
      // Nothing usable at all is a failed job, not a warning: the rejects say why.
      const message =
        `nothing was loaded: all ${first.rejected} record(s) were rejected` +
        (counts?.firstReject ? ` (the first: ${counts.firstReject})` : '') +
        (first.alreadyLoaded
          ? ''
          : `; they are kept in ${first.rejectsLocation ?? `${first.location}_rejects`}`);
      this.logger.warn(
        { pipelineToken: events.job.pipelineToken, processName: 'DataQuality', err: message },
        'ingestion job failed',
      );
      await events.record('DataQuality', 'error', message, 'error', {
        loaded: 0,
        rejected: first.rejected,
      });
      return;
    }
    const rejected = Math.max(...loaded.map((l) => (l.result as LoadResult).rejected));
    const outcome = failed.length > 0 || rejected > 0 || note !== null ? 'warning' : 'success';
    const summary = loaded.map((l) => `${(l.result as LoadResult).loaded} loaded into ${l.destination.name}`);
    await events.record(
      'JobRunner',
      'end',
      `${outcome}: ${summary.join(', ')}; ${rejected} rejected` +
        (failed.length > 0 ? `; not loaded into ${failed.map((l) => l.destination.name).join(', ')}` : '') +
        (note !== null ? `; ${note}` : ''),
      outcome,
      { loaded: first.loaded, rejected },
    );
  }
  /**
   * The checking stages' end entries once the input is read (`counts`), or found loaded already by an
   * earlier delivery, kept to be written with the job's end (finish()). A file without a record fails
   * the job.
   */
  checked(
    events: JobEvents,
    legs: Leg[],
    counts: Counts | null,
    first: { header: string[] | null },
    transforms: boolean,
  ): void {
    if (counts !== null) {
      events.add(
        'DataQuality',
        'end',
        `${counts.rows} rows checked, ${counts.dq} rejected` +
          (counts.unparsed > 0
            ? `; ${counts.unparsed} of them went to the destination unparsed (fast path)` +
              (counts.binary > 0 ? `, ${counts.binary} written as binary COPY` : '')
            : ''),
      );
      if (transforms) {
        events.add('Transformation', 'end', `${counts.tf} row(s) rejected by the output types`);
      }
      if (counts.rows === 0) {
        throw new StageError(
          'DataQuality',
          first.header ? 'the file has a header row but no data rows' : 'the file holds no records',
        );
      }
    } else if (legs.every((l) => l.result !== null)) {
      events.add('DataQuality', 'end', 'an earlier delivery of this job already loaded it');
    }
  }

  /**
   * The `begin` entries of the checking stages and of each loader, once the job's plan is made: written
   * in one round trip with what the job kept before (its JobRunner begin, for an input already whole).
   */
  async began(
    events: JobEvents,
    definition: PipelineDefinition,
    loading: Leg[],
    scripts: JobScript[],
    plan: { fast: boolean; transforms: boolean; whole: boolean },
  ): Promise<void> {
    const fields = definition.source.schemaProperties.fields;
    const transformScript = scripts.find((s) => s.kind === 'transformation');
    const checkScript = scripts.find((s) => s.kind === 'dataQuality');
    const { fast, transforms, whole } = plan;
    events.add(
      'DataQuality',
      'begin',
      `checking types of ${fields.length} columns and ${definition.dataQuality.rules.length} rule(s)` +
        (checkScript
          ? `, then the data-quality script (version ${checkScript.version ?? 'unnumbered'})`
          : '') +
        (fast ? '; clean CSV chunks go to the destination unparsed' : ''),
    );
    if (transforms) {
      events.add(
        'Transformation',
        'begin',
        `${definition.transformation.mappings.length} mapping step(s)` +
          (transformScript
            ? `, then the transformation script (version ${transformScript.version ?? 'unnumbered'})`
            : ''),
      );
    }
    for (const leg of loading) {
      events.add(
        leg.destination.processName,
        'begin',
        `writing into ${leg.destination.describe(definition.destination)}`,
      );
    }
    // An input the job carried whole is small: its load mostly ends within milliseconds, and these
    // entries then go with its end (see lingerFor).
    if (whole) events.lingerFor(BEGIN_LINGER_MS);
    else await events.flush();
  }

  /**
   * `processing` entries with the rows so far and the input's bytes read (of how many, and the
   * percentage, when the size is known): at most every progressEveryMs, in order, all written before
   * the stage ends.
   */
  progress(
    events: JobEvents,
    processName: ProcessName,
    sofar: () => { rejected: number; read: number; size: number | null },
  ): { report: (loaded: number) => void; written: () => Promise<void> } {
    let last = Date.now();
    let chain: Promise<void> = Promise.resolve();
    return {
      report: (loaded) => {
        if (Date.now() - last < this.config.progressEveryMs) return;
        last = Date.now();
        const { rejected, read, size } = sofar();
        const note =
          `${loaded} rows loaded so far; ${rejected} rejected; ` +
          (size === null
            ? `${read} bytes read`
            : `${read} of ${size} bytes read (${Math.min(100, Math.floor((read * 100) / size))}%)`);
        chain = chain.then(() => events.record(processName, 'processing', note).catch(() => undefined));
      },
      written: () => chain,
    };
  }
}

import type { DomainCode } from './errors';

/** The domain codes of pipeline errors: the error body's `code`. */
export const PipelineErrorCode = {
  NotFound: 'pipeline.not_found',
  /** An earlier DELETE did not finish. */
  Deleting: 'pipeline.deleting',
  /** A load is creating the destination objects or writing files: the DELETE waits for it. */
  LoadRunning: 'pipeline.load_running',
  /** Outside the caller's confinement, or a platform-owned place. */
  DestinationRefused: 'pipeline.destination_refused',
  /**
   * A pipeline stored before saves checked who else loads where it loads, sharing its table or
   * collection with a pipeline of another scope: it loads again once saved again.
   */
  LocationUnchecked: 'pipeline.location_unchecked',
  /**
   * A pipeline saved by a scoped caller would load into a table or collection that exists but that no
   * pipeline of its environment created: it loads there once saved by an unscoped pipeline:update.
   */
  LocationUnclaimed: 'pipeline.location_unclaimed',
  Invalid: 'pipeline.invalid',
  InvalidExpression: 'pipeline.invalid_expression',
  /** The file's content (not its name) shows a type the pipeline cannot read, e.g. a PDF for a CSV pipeline. */
  UnsupportedFile: 'pipeline.unsupported_file',
  /** DELETE /pipeline/jobs/{pipelineToken}/rows: no job of the caller's has that token. */
  JobNotFound: 'pipeline.job_not_found',
  /** A job's rows cannot be removed yet (it is running) or at all (its pipeline predates load ids). */
  RowsNotRemovable: 'pipeline.rows_not_removable',
} as const satisfies Record<string, DomainCode>;

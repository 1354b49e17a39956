/** A sample that cannot be used to infer a schema; the message names the problem for the user. */
export class SchemaSampleError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SchemaSampleError';
  }
}

/**
 * Samples are inferred recursively; this bound keeps a pathological sample (say `[[[[…`) from
 * overflowing the stack, far above the nesting of any real record.
 */
export const MAX_SAMPLE_DEPTH = 100;

import { FatalReadError } from './record-batch';

/**
 * The writer behind a streamed load ended it without `done`: the upload or tap run failed
 * (`superseded: false`) or moved its load to another job (`superseded: true`). Nothing may be
 * committed.
 */
export class StreamEndedError extends FatalReadError {
  constructor(
    readonly superseded: boolean,
    message: string,
  ) {
    super(message);
  }
}

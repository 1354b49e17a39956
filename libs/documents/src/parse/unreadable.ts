/** A refusal of the document itself (never a bug): the parse process reports it with its severity. */
export class Unreadable extends Error {
  constructor(
    message: string,
    readonly severity: 'error' | 'warning' = 'error',
  ) {
    super(message);
  }
}

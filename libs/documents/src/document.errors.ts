/**
 * A document that gives no text to load: `error` when it cannot be read (encrypted, corrupt, binary,
 * not UTF-8, too large or too slow), `warning` when it is readable but holds no text.
 */
export class DocumentError extends Error {
  constructor(
    message: string,
    readonly severity: 'error' | 'warning' = 'error',
  ) {
    super(message);
    this.name = 'DocumentError';
  }
}

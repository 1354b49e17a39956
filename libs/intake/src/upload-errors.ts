import type { DomainCode } from '@tapyard/core';

/** The domain codes of upload and sample errors: the error body's `code`. */
export const UploadErrorCode = {
  /** The multipart form lacks `file` or `pipeline`. */
  MissingField: 'upload.missing_field',
  /** A form field that does not fit (a flag, a number, the delimiter, the publisher token). */
  InvalidField: 'upload.invalid_field',
  /** `publishertoken` sent after `file` in a streamed upload. */
  FieldOrder: 'upload.field_order',
  Empty: 'upload.empty',
  /** Over UPLOAD_LIMIT. */
  TooLarge: 'upload.too_large',
  /** A compression Tapyard does not read, or an archive where a single file is expected. */
  UnsupportedFormat: 'upload.unsupported_format',
  /** The instance has no object store (OBJECT_STORE_ENDPOINT), so it takes no uploads. */
  NoObjectStore: 'upload.no_object_store',
  /** The sample cannot be read as its format (schema discovery). */
  Unreadable: 'upload.unreadable',
} as const satisfies Record<string, DomainCode>;

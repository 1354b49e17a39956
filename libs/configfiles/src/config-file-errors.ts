import type { DomainCode } from '@tapyard/core';

/** The domain codes of config-file errors: the error body's `code`. */
export const ConfigFileErrorCode = {
  /** The multipart form lacks `type` or `file`. */
  MissingField: 'config_file.missing_field',
  UnknownType: 'config_file.unknown_type',
  /** A file or schema name outside letters, digits, '.', '_' and '-'. */
  InvalidName: 'config_file.invalid_name',
  /** The file's extension does not fit its type. */
  WrongType: 'config_file.wrong_type',
  Empty: 'config_file.empty',
  TooLarge: 'config_file.too_large',
  /** Not a JSON Schema or XSD that can be compiled. */
  InvalidSchema: 'config_file.invalid_schema',
  /** A sample a schema cannot be inferred from. */
  InvalidSample: 'config_file.invalid_sample',
  /** A pipeline names a validation schema the environment does not have. */
  SchemaNotFound: 'config_file.schema_not_found',
} as const satisfies Record<string, DomainCode>;

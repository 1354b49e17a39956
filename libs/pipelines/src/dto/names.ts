/** Name patterns the pipeline DTOs validate against. */
export const PIPELINE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
export const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
export const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,62}$/;

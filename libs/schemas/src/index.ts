export { SchemaSampleError } from './sample-error';
export { generateJsonSchema } from './json-schema';
export { findRecordPath } from './json-sample';
export { generateXsd } from './xsd';
export * from './xsd-validator';

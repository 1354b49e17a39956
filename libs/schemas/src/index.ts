export { SchemaSampleError } from './sample-error';
export { generateJsonSchema } from './json-schema';
export { generateXsd } from './xsd';
export * from './xsd-validator';

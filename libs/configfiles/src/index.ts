export * from './config-files.service';
export * from './configfiles.module';
export * from './config-file-errors';
export { jsonSchemaSuitsMainThread } from './json-schema-limits';

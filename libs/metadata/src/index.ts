export * from './metadata.module';
export * from './metadata.service';
export * from './metadata-errors';

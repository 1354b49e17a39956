export * from './metadata.module';
export * from './metadata.service';
export * from './metadata-errors';
export * from './assistant-tools';

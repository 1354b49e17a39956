export * from './ingestion.module';
export * from './ingestion.runner';
export * from './upload.service';
export * from './upload-errors';
export * from './schema-discovery.service';
export * from './file-notifier';
export * from './spool';
export * from './staging';
export type { UploadedSample } from './sample';

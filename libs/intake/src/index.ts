export * from './intake.module';
export * from './assistant-tools';
export * from './upload.service';
export * from './upload-errors';
export * from './schema-discovery.service';
export * from './file-notifier';
export * from './spool';
export * from './staging';
export type { UploadedSample } from './sample';

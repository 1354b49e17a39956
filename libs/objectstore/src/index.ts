export * from './object-store';
export * from './objectstore.module';
export * from './s3-requests';
export type { BodyMemory } from './http-get';

export * from './object-store';
export * from './objectstore.module';

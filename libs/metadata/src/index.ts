export * from './metadata.module';
export * from './metadata.service';

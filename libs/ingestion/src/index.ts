export * from './ingestion.module';
export * from './ingestion.runner';

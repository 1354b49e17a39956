export * from './ingestion.module';
export * from './ingestion.runner';
export * from './upload.service';
export * from './readers/record-batch';
export * from './readers/csv-reader';
export * from './readers/json-reader';
export * from './readers/xml-reader';
export * from './schema-discovery.service';

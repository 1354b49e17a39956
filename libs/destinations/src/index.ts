export * from './destination';
export * from './destinations.module';
export * from './postgres/postgres.destination';
export { quoteIdent, rejectsTable } from './postgres/created-tables';
export * from './copy-text';
export * from './postgres/pg-pools';
export * from './mongodb/mongo-clients';
export * from './mongodb/mongodb.destination';
export * from './objectstore/objectstore.destination';

export * from './destination';
export * from './destinations.module';
export * from './postgres/postgres.destination';
export * from './copy-text';

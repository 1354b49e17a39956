export * from './coerce';
export * from './typed-batch';

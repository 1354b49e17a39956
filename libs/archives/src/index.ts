export * from './extract';

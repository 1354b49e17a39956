export * from './nl-query.service';
export * from './answer.service';
export * from './nl-query.module';
export { UnsafeSqlError, checkReadOnlySql } from './sql-safety';
export { QueryRunner } from './query-runner';
export type { RelationRef } from './sql-safety';
export { QueryErrorCode } from './query-errors';
export * from './assistant-tools';

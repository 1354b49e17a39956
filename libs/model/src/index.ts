export * from './errors';
export * from './pipeline-errors';
export * from './pipeline.types';
export { MAX_RULES_PER_COLUMN, columnsOverRuleLimit } from './data-quality-limits';
export * from './values';
export * from './expression';
export * from './output-fields';
export * from './text/safe-text';
export * from './text/linear-regex';

export * from './errors';
export * from './pipeline-errors';
export * from './pipeline.types';
export * from './values';
export * from './expression';
export * from './output-fields';
export * from './text/safe-text';
export * from './text/linear-regex';

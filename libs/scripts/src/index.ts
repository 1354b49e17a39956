export * from './script-contract';
export * from './script-runner';

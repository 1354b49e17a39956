export * from './column-profile';
export * from './run-profile';
export * from './diff';
export * from './checks';

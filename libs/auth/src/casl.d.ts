// @casl/ability publishes its types only through package.json "exports", which our "node"
// module resolution (needed for CommonJS + Jest on Node 20) does not read.
declare module '@casl/ability' {
  export * from '@casl/ability/dist/types/index';
}

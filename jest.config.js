/** Unit specs live beside the code (libs/**, apps/**); integration and e2e specs in test/. */
module.exports = {
  testEnvironment: 'node',
  rootDir: '.',
  roots: ['<rootDir>/libs', '<rootDir>/apps', '<rootDir>/test'],
  testRegex: '.*\\.(spec|e2e-spec)\\.ts$',
  moduleFileExtensions: ['ts', 'js', 'json'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
  },
  moduleNameMapper: {
    '^@tapyard/(.*)$': '<rootDir>/libs/$1/src',
    // The Milvus SDK's bulk writer loads thrift, which requires an ESM-only uuid; Node 20 runs that
    // (require of ESM), Jest's module loader does not. The project's own uuid (CommonJS, same API) stands in.
    '^uuid$': require.resolve('uuid'),
  },
  globalSetup: '<rootDir>/test/global-setup.ts',
  // A bound, not a schedule: tests wait on conditions and end as soon as they hold; a loaded
  // machine (CI on two shared cores) must not turn a slow run into a failure.
  testTimeout: 120000,
  maxWorkers: 2,
};

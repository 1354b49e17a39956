/**
 * Two projects, run together by `npm test` into one report:
 * - `unit`: specs beside the code (libs/**, apps/**); no local peers needed, so no globalSetup;
 * - `e2e`: integration and e2e specs in test/, against the local peers of scripts/services.
 * `npx jest --selectProjects unit` runs the first alone on a machine without those peers.
 */
const shared = {
  testEnvironment: 'node',
  rootDir: '.',
  moduleFileExtensions: ['ts', 'js', 'json'],
  // Transpile only, with SWC: `npm test` type-checks the same sources with `tsc --noEmit` beside Jest.
  // The options say what tsconfig.json says (ES2022 with define semantics for class fields, legacy
  // decorators with their design-time metadata for Nest and class-validator, CommonJS with interop).
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      {
        jsc: {
          parser: { syntax: 'typescript', decorators: true },
          target: 'es2022',
          transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: true },
        },
        module: { type: 'commonjs' },
      },
    ],
    // The Kafka client ships ES modules only; Node requires them (require(esm)), Jest's module loader
    // does not without --experimental-vm-modules: in-process tests (an in-process worker, the tests'
    // consumer) get it as CommonJS.
    '^.+/node_modules/@platformatic/.+\\.js$': [
      '@swc/jest',
      { jsc: { parser: { syntax: 'ecmascript' }, target: 'es2022' }, module: { type: 'commonjs' } },
    ],
  },
  transformIgnorePatterns: ['/node_modules/(?!@platformatic/)'],
  moduleNameMapper: {
    '^@tapyard/(.*)$': '<rootDir>/libs/$1/src',
    // The Milvus SDK's bulk writer loads thrift, which requires an ESM-only uuid; Node 20 runs that
    // (require of ESM), Jest's module loader does not. The project's own uuid (CommonJS, same API) stands in.
    '^uuid$': require.resolve('uuid'),
  },
};

module.exports = {
  projects: [
    {
      ...shared,
      displayName: 'unit',
      roots: ['<rootDir>/libs', '<rootDir>/apps'],
      testRegex: '.*\\.spec\\.ts$',
    },
    {
      ...shared,
      displayName: 'e2e',
      roots: ['<rootDir>/test'],
      testRegex: '.*\\.(spec|e2e-spec)\\.ts$',
      globalSetup: '<rootDir>/test/global-setup.ts',
      // Node's, removing the object-store buckets of the environments a file made once it is done.
      testEnvironment: '<rootDir>/test/environment.js',
    },
  ],
  // A bound, not a schedule: tests wait on conditions and end as soon as they hold; a loaded
  // machine (CI on two shared cores) must not turn a slow run into a failure.
  testTimeout: 120000,
  // The longest files first, also on a fresh clone (test/sequencer.js, test/durations.json).
  testSequencer: '<rootDir>/test/sequencer.js',
  // More workers than cores: most suites wait on servers (PostgreSQL, MinIO, the sandbox, the apps
  // they spawn). On the 2-core machine the whole run took 730 s with 2 workers, 543 s with 3 and
  // 488 s with 4; the twelve longest e2e files (the suites that time shutdowns and stalls among them)
  // took 223 s with 3, 207 s with 4 and 217 s with 5 (load 11 to 17), passing at 3 and 4; at 5 a wait
  // of the console's outran its bound. `npm test` runs the unit project with 3 beside the e2e run.
  maxWorkers: 4,
};

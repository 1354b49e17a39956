// Preloaded into a built app by test/sdk-loading.e2e-spec.ts (`node --require`): when the process
// exits, writes every module file it loaded (one path a line) to $TAPYARD_TEST_LOADED_MODULES. Lives in
// test/ and is never part of a build: production processes cannot be asked what they loaded.
'use strict';
const { writeFileSync } = require('node:fs');

const out = process.env.TAPYARD_TEST_LOADED_MODULES;
if (out) {
  process.once('exit', () => writeFileSync(out, Object.keys(require.cache).join('\n') + '\n'));
}

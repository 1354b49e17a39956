import { resolve } from 'node:path';

/**
 * The harness ships beside the compiled code: libs/sandbox/src/x.ts under Jest and
 * dist/libs/sandbox/src/x.js in the build both resolve to <lib>/python/harness.py, which imports
 * the modules of <lib>/python/_tapyard_harness beside it.
 */
export const DEFAULT_HARNESS_PATH = resolve(__dirname, '..', 'python', 'harness.py');

/**
 * Threads and processes that run a file of this code base: a built `.js` file directly, a `.ts`
 * source (Jest) through a transpile-only loader: `.ts` files are compiled with the project's
 * TypeScript (cached under the system temp directory by content hash) and `@tapyard/<lib>` maps to
 * `libs/<lib>/src`, as tsconfig `paths` say.
 */
import { extname, resolve } from 'node:path';
import { Worker, WorkerOptions } from 'node:worker_threads';

/**
 * A worker thread running `entry`, a built `.js` file or a `.ts` source (tests use it too). `data`
 * reaches the thread as `workerData.data`.
 */
export function spawnWorker(
  entry: string,
  options: { data?: unknown; resourceLimits?: WorkerOptions['resourceLimits'] } = {},
): Worker {
  const { data, resourceLimits } = options;
  if (extname(entry) !== '.ts') return new Worker(entry, { workerData: { data }, resourceLimits });
  return new Worker(TS_BOOTSTRAP, {
    eval: true,
    workerData: { entry, root: resolve(__dirname, '../../../..'), data },
    resourceLimits,
  });
}

/**
 * The arguments that make `node` run `entry` in a process of its own: a built `.js` file directly, a
 * `.ts` source through the same loader as threads.
 */
export function nodeEntryArgs(entry: string): string[] {
  return extname(entry) === '.ts' ? ['-e', TS_BOOTSTRAP, entry, resolve(__dirname, '../../../..')] : [entry];
}

// In a process (`node -e`), the entry and root come as arguments; in a thread, as workerData.
const TS_BOOTSTRAP = `
const Module = require('node:module');
const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');
const os = require('node:os');
const { entry, root } = require('node:worker_threads').workerData ?? { entry: process.argv[1], root: process.argv[2] };
const rootRequire = Module.createRequire(path.join(root, 'package.json'));
const tsVersion = JSON.parse(fs.readFileSync(rootRequire.resolve('typescript/package.json'), 'utf8')).version;
const cacheDir = path.join(os.tmpdir(), 'tapyard-stage-thread-ts');
fs.mkdirSync(cacheDir, { recursive: true });
let ts = null;
Module._extensions['.ts'] = function (module, filename) {
  const src = fs.readFileSync(filename, 'utf8');
  const key = crypto.createHash('sha256').update(tsVersion + '\\0' + filename + '\\0' + src).digest('hex');
  const file = path.join(cacheDir, key + '.js');
  let out;
  try {
    out = fs.readFileSync(file, 'utf8');
  } catch {
    ts = ts || rootRequire('typescript');
    out = ts.transpileModule(src, {
      fileName: filename,
      compilerOptions: {
        module: ts.ModuleKind.CommonJS,
        target: ts.ScriptTarget.ES2022,
        esModuleInterop: true,
        experimentalDecorators: true,
        emitDecoratorMetadata: true,
        inlineSourceMap: true,
      },
    }).outputText;
    const tmp = file + '.' + process.pid + '.' + crypto.randomBytes(4).toString('hex');
    fs.writeFileSync(tmp, out);
    fs.renameSync(tmp, file);
  }
  module._compile(out, filename);
};
const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  const lib = /^@tapyard\\/([a-z0-9-]+)$/.exec(request);
  return resolveFilename.call(this, lib ? path.join(root, 'libs', lib[1], 'src', 'index.ts') : request, ...rest);
};
require(entry);
`;

import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { testEnv } from './support/env';
import { closedPort } from './support/net';
import { Spawned, spawnApp } from './support/processes';

/**
 * Vendor SDKs a process loads only when it first talks to that vendor (each connection factory imports
 * its SDK): an idle API or worker never pays for them in start-up time or memory.
 */
const LAZY_SDKS = [
  'snowflake-sdk',
  '@zilliz/milvus2-sdk-node',
  '@qdrant/js-client-rest',
  '@platformatic/kafka',
  'mongoose',
  '@stomp/stompjs',
  '@stomp/tcp-wrapper',
  '@dsnp/parquetjs',
  'onnxruntime-node',
  '@huggingface/tokenizers',
  'openai',
  '@anthropic-ai/sdk',
  // Not a vendor SDK, but as heavy: PostgreSQL's parser in WebAssembly, for the query routes' SQL checks.
  'libpg-query',
];

const PRELOAD = join(__dirname, 'support', 'loaded-modules.js');

/** The npm packages of the module files a process loaded, with how many files of each. */
function packagesOf(paths: string[]): Map<string, number> {
  const packages = new Map<string, number>();
  for (const path of paths) {
    const name = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(path)?.[1];
    if (name) packages.set(name, (packages.get(name) ?? 0) + 1);
  }
  return packages;
}

function residentMegabytes(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Math.round(Number(kb) / 1024);
}

/** Boots the built app with the preload, stops it once ready, and returns what it had loaded. */
async function bootAndStop(
  app: 'api' | 'worker',
  ready: RegExp,
  env: Record<string, string>,
): Promise<{ packages: Map<string, number>; rssMb: number }> {
  const record = join(mkdtempSync(join(tmpdir(), 'tapyard-loaded-')), 'modules.txt');
  const started = Date.now();
  const proc: Spawned = spawnApp(app, testEnv({ ...env, TAPYARD_TEST_LOADED_MODULES: record }), [
    '--require',
    PRELOAD,
  ]);
  try {
    await proc.waitFor(ready);
    const bootMs = Date.now() - started;
    const rssMb = residentMegabytes(proc.child.pid as number);
    proc.child.kill('SIGTERM');
    expect(await proc.exited).toBe(0);
    const paths = readFileSync(record, 'utf8').split('\n').filter(Boolean);
    const packages = packagesOf(paths);
    // The figures issue 30 tracks (idle RSS; what stays loaded), for whoever reads the log.
    console.log(
      `${app}: ready in ${bootMs} ms, rss ${rssMb} MB, ${paths.length} module files; by package: ` +
        [...packages]
          .sort((a, b) => b[1] - a[1])
          .map(([name, n]) => `${name} ${n}`)
          .join(', '),
    );
    return { packages, rssMb };
  } finally {
    if (proc.child.exitCode === null) proc.child.kill('SIGKILL');
  }
}

describe('vendor SDKs load on first use, not at boot', () => {
  it('an API that has served nothing has loaded none of them', async () => {
    const { packages } = await bootAndStop('api', /Tapyard API listening/, {
      PORT: String(await closedPort()),
      HOST: '127.0.0.1',
    });
    expect(LAZY_SDKS.filter((sdk) => packages.has(sdk))).toEqual([]);
  });

  it('a worker that has run no job has loaded none of them', async () => {
    const { packages } = await bootAndStop('worker', /Tapyard worker ready/, {});
    expect(LAZY_SDKS.filter((sdk) => packages.has(sdk))).toEqual([]);
  });
});

/**
 * The modules a built worker thread's entry loads before its first message: every stage thread pays
 * for them in CPU when it starts (one with the worker, one for each thread let go).
 */
async function threadModules(entry: string): Promise<string[]> {
  const thread = new Worker(
    `require(${JSON.stringify(entry)});
     require('node:worker_threads').parentPort.postMessage(Object.keys(require.cache));`,
    { eval: true },
  );
  try {
    return await new Promise<string[]>((resolve, reject) => {
      thread.once('message', resolve);
      thread.once('error', reject);
    });
  } finally {
    await thread.terminate();
  }
}

describe('a stage thread loads what reading, checking and converting need', () => {
  it("none of the apps' frameworks: Nest, the validators, the Redis client, the logger", async () => {
    const paths = await threadModules(
      join(__dirname, '..', 'dist', 'libs', 'ingestion', 'src', 'stage-thread', 'thread-main.js'),
    );
    const packages = packagesOf(paths);
    console.log(`stage thread: ${paths.length} module files; packages: ${[...packages.keys()].join(', ')}`);
    // One import of @tapyard/core (its barrel is the apps' whole framework) made these 923 files, some
    // 300 ms of CPU per thread start; the thread needs none of them.
    const heavy = [
      '@nestjs/common',
      '@nestjs/core',
      'class-validator',
      'class-transformer',
      'rxjs',
      'ioredis',
      'pino',
      'busboy',
    ];
    expect(heavy.filter((name) => packages.has(name))).toEqual([]);
    expect(paths.filter((p) => /\/libs\/core\//.test(p))).toEqual([]);
    expect(paths.length).toBeLessThan(200);
  });
});

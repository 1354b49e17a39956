/**
 * `npm run bench:vectors` — documents into vector stores, per store (BENCH_STORES, default all five):
 * 1. the embedder alone: chunks/s of the built-in model embedding the corpus's chunks in this process
 *    (the worker's own embedder: same model, same ONNX threads, same batching), measured before and
 *    after each store's platform run; the two must agree within NOT_COMPARABLE, else the run fails;
 * 2. the store alone: chunks/s of bulk upserts of the same chunks, vectors precomputed, into a fresh
 *    container;
 * 3. the platform: the corpus (BENCH_VECTOR_DOCS Markdown documents, default 200) uploaded over HTTP
 *    as one zipped set into a document pipeline (one job per document), until every job is done (polled
 *    every POLL_MS: a status reply of 200 jobs costs the API real CPU, which 20 polls a second took
 *    from the embedder); chunks/s up to the last job's recorded end (not the poll that saw it), and
 *    its ratio to the slower of 1 (the mean of before and after) and 2 (the goal is ≥ 0.8); the
 *    model's CPU per chunk alone and in the platform, and when in the run the model began;
 * 4. search latency at BENCH_VECTOR_SEARCH_CHUNKS (default 100,000) chunks: vectors made from the
 *    corpus's embeddings (mixes of two, normalised), bulk-loaded, then p50/p95 of 200 `search` calls
 *    (topK 5) straight to the store, with and without a metadata filter.
 * Each store's peer is started by `scripts/services up <store>`. Exits 1 when a store's run was not
 * comparable (the embedder alone moved by more than NOT_COMPARABLE between before and after: the
 * shared machine's load changed under the run).
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@tapyard/core';
import { chunkText } from '@tapyard/documents';
import { EgressPolicy } from '@tapyard/egress';
import { createEmbedder } from '@tapyard/embeddings';
import type { Embedder } from '@tapyard/embeddings';
import { CHUNKING_DEFAULTS, VECTOR_STORES, VectorStoreName } from '@tapyard/model';
import { ChunkRecord, VECTOR_STORE_PLUGINS, VectorStoreRegistry } from '@tapyard/vector-stores';
import { zip } from '../test/support/archives';
import {
  DB_URL,
  ROOT,
  benchTarget,
  checkComparable,
  cpuSeconds,
  peerMissing,
  postJson,
  startPlatform,
  threadCpuSeconds,
  uploadFile,
  waitForRollup,
} from './support';

const DOCS = Number(process.env.BENCH_VECTOR_DOCS ?? 200);
const SEARCH_CHUNKS = Number(process.env.BENCH_VECTOR_SEARCH_CHUNKS ?? 100_000);
const QUERIES = 200;
const POLL_MS = 1000;
/** How often the worker's model CPU is sampled during a platform run. */
const SAMPLE_MS = 250;
/** Largest relative change of the embedder-alone rate between before and after a platform run. */
const NOT_COMPARABLE = 0.25;
const STORES = (process.env.BENCH_STORES?.split(',') ?? [...VECTOR_STORES]) as VectorStoreName[];
const { PORT, BASE } = benchTarget('benchvec');

const WORDS = (
  'policy employee vacation holiday manager request weeks advance quarter carry budget invoice supplier ' +
  'contract renewal security password laptop phishing account customer data server backup restore ' +
  'network office canteen lunch breakfast parking garage bicycle train travel expense receipt hotel ' +
  'meeting agenda minutes project deadline release testing quality review training course certificate ' +
  'health insurance pension salary bonus overtime shift weekend report dashboard metric forecast'
).split(' ');

/** A document of a few paragraphs of varied sentences (seeded: every run writes the same corpus). */
function corpus(n: number): { name: string; text: string }[] {
  let seed = 42;
  const rnd = (k: number): number => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % k);
  return Array.from({ length: n }, (_, d) => {
    const paras = Array.from({ length: 4 + rnd(6) }, () =>
      Array.from({ length: 3 + rnd(5) }, () => {
        const words = Array.from({ length: 8 + rnd(14) }, () => WORDS[rnd(WORDS.length)]);
        return `${words.join(' ').replace(/^./, (c) => c.toUpperCase())}.`;
      }).join(' '),
    );
    return { name: `doc-${d}.md`, text: `# Topic ${d}: ${WORDS[d % WORDS.length]}\n\n${paras.join('\n\n')}` };
  });
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function peerFields(store: VectorStoreName): Record<string, string> {
  const out = execFileSync('bash', [join(ROOT, 'scripts', 'services'), 'up', store], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return JSON.parse(out.trim().split('\n').pop() ?? '{}') as Record<string, string>;
}

function allowList(fields: Record<string, string>): string {
  const u = new URL(fields.url ?? fields.connectionString);
  return [`${u.hostname}:${u.port}`, ...(fields.grpcPort ? [`${u.hostname}:${fields.grpcPort}`] : [])].join(
    ',',
  );
}

async function main(): Promise<void> {
  const config = loadConfig({ ...process.env, DATABASE_URL: DB_URL, TAPYARD_MASTER_KEY: 'b'.repeat(64) });
  const embedder: Embedder = await createEmbedder(null, new EgressPolicy(), config);
  const docs = corpus(DOCS);
  const size = Math.min(CHUNKING_DEFAULTS.size, embedder.maxInputTokens - 2);
  const chunks = docs.flatMap((d) =>
    chunkText(d.text, embedder.tokenizer, { ...CHUNKING_DEFAULTS, size }).map((c) => ({ doc: d.name, ...c })),
  );
  console.log(
    `corpus: ${DOCS} documents, ${chunks.length} chunks of at most ${size} tokens (${embedder.model})`,
  );

  const modelCpu = async (pid: number): Promise<number> =>
    (await threadCpuSeconds(pid)).get('WorkerThread') ?? 0;
  const embedAlone = async (): Promise<{ rate: number; vectors: Float32Array[] }> => {
    const cpu = await modelCpu(process.pid);
    const start = performance.now();
    const out = await embedder.embed(chunks.map((c) => c.text));
    const seconds = (performance.now() - start) / 1000;
    const rate = chunks.length / seconds;
    const used = (await modelCpu(process.pid)) - cpu;
    console.log(
      `embedder alone: ${rate.toFixed(1)} chunks/s, model ${((used * 1000) / chunks.length).toFixed(0)} ms CPU per chunk, ` +
        `${(used / seconds).toFixed(2)} cores (load average ${loadavg()[0].toFixed(1)})`,
    );
    return { rate, vectors: out };
  };
  let t: number;
  const first = await embedAlone();
  const vectors = first.vectors;
  let embedBefore = first.rate;
  let failed = false;

  const dir = await mkdtemp(join(tmpdir(), 'tapyard-bench-vectors-'));
  const archive = join(dir, 'corpus.zip');
  await writeFile(archive, zip(docs.map((d) => ({ name: d.name, data: d.text }))));
  const rows: string[] = [];
  const registry = new VectorStoreRegistry(VECTOR_STORE_PLUGINS);
  for (const store of STORES) {
    const factory = registry.factory(store);
    if (!factory) {
      peerMissing(`${store}: no plug-in registered`);
      continue;
    }
    let fields: Record<string, string>;
    try {
      fields = peerFields(store);
    } catch (err) {
      peerMissing(`${store}: ${(err as Error).message.split('\n')[0]}`);
      continue;
    }
    const u = new URL(fields.url ?? fields.connectionString);
    const vs = factory(
      fields,
      new EgressPolicy([
        { host: u.hostname, port: Number(u.port) },
        ...(fields.grpcPort ? [{ host: u.hostname, port: Number(fields.grpcPort) }] : []),
      ]),
    );

    // 2. The store alone.
    const bulk = vs.containerName(`bench_bulk_${Date.now().toString(36)}`);
    await vs.ensure(bulk, embedder.dimension);
    const records: ChunkRecord[] = chunks.map((c, i) => ({
      id: randomUUID(),
      text: c.text,
      vector: vectors[i],
      metadata: {
        uri: c.doc,
        filename: c.doc,
        chunkIndex: c.index,
        pipeline: 'bench',
        contentHash: 'x',
        ingestedAt: new Date().toISOString(),
      },
    }));
    t = performance.now();
    for (let i = 0; i < records.length; i += 256) await vs.upsert(bulk, records.slice(i, i + 256));
    const upsertRate = records.length / ((performance.now() - t) / 1000);
    await vs.drop(bulk);

    // 3. The platform: uploads into a document pipeline, every job done.
    const env = `benchvec-${store}-${Date.now().toString(36)}`;
    const platform = await startPlatform(env, PORT, dir, {
      // BENCH_NODE_OPTIONS: flags for the apps instead of the deployed ones (e.g. `--cpu-prof` to profile them).
      ...(process.env.BENCH_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS } : {}),
      ...(store === 'pgvector'
        ? { PGVECTOR_URL: fields.connectionString }
        : { TAP_EGRESS_ALLOW: allowList(fields) }),
    });
    let ingestRate: number;
    const collection = `bench_${Date.now().toString(36)}`;
    try {
      if (store !== 'pgvector') {
        const put = await fetch(`${BASE}/secrets/${store}`, {
          method: 'PUT',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(fields),
        });
        if (!put.ok) throw new Error(`secret: ${put.status} ${await put.text()}`);
      }
      await postJson(`${BASE}/pipeline`, {
        name: 'bench_docs',
        source: { fileAttributes: { unstructuredAttributes: {} }, schemaProperties: { fields: [] } },
        destination: { vectorStore: { store, collection } },
      });
      const publisher = randomUUID();
      const apps = [platform.api.pid ?? 0, platform.worker.pid ?? 0];
      const cpu = await Promise.all(apps.map(cpuSeconds));
      const threads = await threadCpuSeconds(platform.worker.pid ?? 0);
      // The model's CPU sampled through the run: when it starts, and how much of the machine it gets.
      const samples: [number, number][] = [];
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          samples.push([performance.now(), await modelCpu(platform.worker.pid ?? 0)]);
          await new Promise((r) => setTimeout(r, SAMPLE_MS));
        }
      })();
      const began = Date.now();
      t = performance.now();
      // The corpus as one zipped set: FileNotifier makes each document its own job.
      await uploadFile(BASE, archive, 'bench_docs', 'corpus.zip', publisher);
      const jobs = await waitForRollup(BASE, `publishertoken=${publisher}`, docs.length + 1, POLL_MS);
      const seen = (performance.now() - t) / 1000;
      sampling = false;
      await sampler;
      // The platform's own end (the last job's last event), not when a poll saw it: the polls are a
      // second apart, which would err low by up to a second.
      const ended = Math.max(...jobs.map((j) => Date.parse(j.lastEventAt)));
      const elapsed = (ended - began) / 1000;
      ingestRate = chunks.length / elapsed;
      const first = samples.find(([, c]) => c > samples[0][1] + 0.05);
      const modelUsed = samples[samples.length - 1][1] - samples[0][1];
      console.log(
        `${store}: the model began ${first ? ((first[0] - t) / 1000).toFixed(1) : '?'} s after the upload, ` +
          `${(modelUsed / elapsed).toFixed(2)} cores over the run, ${((modelUsed * 1000) / chunks.length).toFixed(0)} ms CPU per chunk; ` +
          `the last job ended ${elapsed.toFixed(1)} s after the upload began, seen by a poll ${(seen - elapsed).toFixed(1)} s later`,
      );
      const [api, worker] = (await Promise.all(apps.map(cpuSeconds))).map((c, i) => c - cpu[i]);
      // The worker's CPU by thread: its main thread (parsing, chunking, tokenizing, protocol writes)
      // against the model's (the embedding thread and the ONNX threads it starts, all `WorkerThread`).
      const byThread = [...(await threadCpuSeconds(platform.worker.pid ?? 0))]
        .map(([name, s]) => [name, s - (threads.get(name) ?? 0)] as const)
        .filter(([, s]) => s >= 0.05)
        .sort((a, b) => b[1] - a[1]);
      const per = (s: number) => `${((s * 1000) / docs.length).toFixed(0)} ms/document`;
      console.log(
        `${store}: worker CPU by thread: ${byThread.map(([name, s]) => `${name} ${s.toFixed(1)} s (${per(s)})`).join(', ')}`,
      );
      console.log(
        `${store}: platform ingest ${ingestRate.toFixed(1)} chunks/s in ${elapsed.toFixed(1)} s ` +
          `(CPU: API ${api.toFixed(1)} s, worker ${worker.toFixed(1)} s; load average ${loadavg()[0].toFixed(1)})`,
      );
      await fetch(`${BASE}/pipeline?pipeline=bench_docs&deleteData=true`, { method: 'DELETE' });
    } finally {
      await platform.stop();
    }
    const embedAfter = (await embedAlone()).rate;
    const embedRate = (embedBefore + embedAfter) / 2;
    const drift = Math.abs(embedBefore - embedAfter) / Math.max(embedBefore, embedAfter);
    const comparable = drift <= NOT_COMPARABLE;
    failed ||= !comparable;
    const embedBeforeRun = embedBefore;
    embedBefore = embedAfter;

    // 4. Search at scale.
    const big = vs.containerName(`bench_search_${Date.now().toString(36)}`);
    await vs.ensure(big, embedder.dimension);
    let seed = 7;
    const rnd = (): number => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed / 2147483648);
    for (let i = 0; i < SEARCH_CHUNKS; i += 1000) {
      const batch: ChunkRecord[] = [];
      for (let j = i; j < Math.min(SEARCH_CHUNKS, i + 1000); j++) {
        const a = vectors[Math.floor(rnd() * vectors.length)];
        const b = vectors[Math.floor(rnd() * vectors.length)];
        const w = rnd();
        const v = a.map((x, k) => w * x + (1 - w) * b[k] + (rnd() - 0.5) * 0.02);
        const n = Math.hypot(...v);
        batch.push({
          id: randomUUID(),
          text: `synthetic chunk ${j}`,
          vector: v.map((x) => x / n),
          metadata: {
            uri: `doc://${j % 1000}`,
            filename: 'synthetic.md',
            chunkIndex: j,
            pipeline: 'bench',
            contentHash: 'x',
            ingestedAt: '2026-11-24T00:00:00Z',
            shard: j % 10,
          },
        });
      }
      await vs.upsert(big, batch);
    }
    const queries = await embedder.embed(
      Array.from(
        { length: QUERIES },
        (_, i) => `${WORDS[i % WORDS.length]} ${WORDS[(i * 7) % WORDS.length]} policy question ${i}`,
      ),
    );
    const time = async (filter?: Record<string, number>): Promise<number[]> => {
      const ms: number[] = [];
      for (const q of queries) {
        const s = performance.now();
        await vs.search(big, q, 5, filter);
        ms.push(performance.now() - s);
      }
      return ms.sort((x, y) => x - y);
    };
    const plain = await time();
    const filtered = await time({ shard: 3 });
    await vs.drop(big);
    await vs.close();
    const ratio = ingestRate / Math.min(embedRate, upsertRate);
    const row =
      `${store}: ingest ${ingestRate.toFixed(1)} chunks/s, embedder ${embedRate.toFixed(1)} ` +
      `(${embedBeforeRun.toFixed(1)} before, ${embedAfter.toFixed(1)} after), upsert ${upsertRate.toFixed(0)}; ` +
      `ratio ${ratio.toFixed(2)}${comparable ? '' : ` NOT COMPARABLE (the embedder alone moved ${(drift * 100).toFixed(0)} %)`} | search at ${SEARCH_CHUNKS} chunks p50 ${percentile(plain, 50).toFixed(1)} ms p95 ` +
      `${percentile(plain, 95).toFixed(1)} ms; filtered p50 ${percentile(filtered, 50).toFixed(1)} ms p95 ${percentile(filtered, 95).toFixed(1)} ms`;
    console.log(row);
    rows.push(row);
  }
  await rm(dir, { recursive: true, force: true });
  console.log('\nsummary');
  for (const r of rows) console.log(r);
  if (failed) {
    throw new Error(
      `not comparable: the embedder alone moved by more than ${NOT_COMPARABLE * 100} % across a store's platform run (the machine's load changed); run again on a quieter machine`,
    );
  }
}

checkComparable();
main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);

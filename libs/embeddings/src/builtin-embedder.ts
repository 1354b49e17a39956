import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { Worker } from 'node:worker_threads';
import { ServiceUnavailableError } from '@tapyard/core';
import type { Embedder, Tokenizer } from './embedder';
import { meanPool, normalize } from './vectors';
import { EmbeddingErrorCode } from './embedding-errors';

export const BUILTIN_MODEL = 'builtin:all-MiniLM-L6-v2';
/** sentence-transformers reads 256 word pieces, [CLS] and [SEP] included. */
const MAX_TOKENS = 256;
/**
 * Inputs per run. Small runs keep the sessions' working memory small (it grows with inputs × tokens²)
 * and cost no speed: 256 inputs of ~150 tokens took 5.5–6.6 s in runs of 8 against 7.4–8.2 s in
 * runs of 32, at 645 MB peak RSS against 720–1,200 MB (docs/benchmarks.md, round so37).
 */
const BATCH = 8;
/**
 * ONNX sessions of one thread each, side by side. Two threads in one session wait for each other at
 * every parallel section of every layer; two sessions of one thread never do.
 */
const SESSIONS = Math.min(2, availableParallelism());
/**
 * Runs handed to each session's thread and not answered yet. With two, the thread starts the next run
 * the moment one ends, instead of waiting for this thread to see the answer and send more: in a
 * worker this thread is busy with the loads' protocol work, and the documents of the run just ended
 * go off to be written while the next run computes.
 */
const IN_FLIGHT = 2 * SESSIONS;
const FILES = ['model_quantized.onnx', 'tokenizer.json', 'tokenizer_config.json'];

/**
 * all-MiniLM-L6-v2 (int8 ONNX) run in this process: no network at all. One set of sessions and one
 * tokenizer per model directory, loaded on first use and shared by every environment.
 */
class BuiltinEmbedder implements Embedder {
  readonly model = BUILTIN_MODEL;
  readonly dimension = 384;
  readonly maxInputTokens = MAX_TOKENS;
  readonly tokenizer: Tokenizer;

  constructor(
    private readonly hf: HfTokenizer,
    private readonly sessions: OnnxThread[],
  ) {
    this.tokenizer = { count: (text) => hf.encode(text, { add_special_tokens: false }).ids.length };
  }

  /** Inputs waiting for the model, from every caller: one run takes up to BATCH of them. */
  private readonly queue: { ids: number[]; done: (v: Float32Array) => void; fail: (e: Error) => void }[] = [];
  private running = 0;

  async embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]> {
    signal?.throwIfAborted();
    // Several jobs embed at once (a worker runs a few documents side by side): their inputs share
    // runs, so a document of three chunks does not pay for a run of three.
    const vectors = Promise.all(
      texts.map(
        (t) =>
          new Promise<Float32Array>((done, fail) => {
            this.queue.push({ ids: this.ids(t), done, fail });
          }),
      ),
    );
    this.pump();
    return vectors;
  }

  private pump(): void {
    while (this.running < IN_FLIGHT && this.queue.length > 0) {
      this.running++;
      // Similar lengths together: less padding per run.
      const window = this.queue.splice(0, BATCH * 4).sort((a, b) => a.ids.length - b.ids.length);
      const batch = window.slice(0, BATCH);
      this.queue.unshift(...window.slice(BATCH));
      this.run(batch.map((e) => e.ids))
        .then(
          (vectors) => batch.forEach((e, k) => e.done(vectors[k])),
          (err: Error) => batch.forEach((e) => e.fail(err)),
        )
        .finally(() => {
          this.running--;
          this.pump();
        });
    }
  }

  private ids(text: string): number[] {
    const ids = this.hf.encode(text).ids;
    // Truncated like the model was trained: keep [CLS] … and end with [SEP].
    return ids.length <= MAX_TOKENS ? ids : [...ids.slice(0, MAX_TOKENS - 1), ids[ids.length - 1]];
  }

  private async run(rows: number[][]): Promise<Float32Array[]> {
    const width = Math.max(...rows.map((r) => r.length));
    const n = rows.length;
    const ids = new BigInt64Array(n * width);
    const mask = new BigInt64Array(n * width);
    rows.forEach((r, i) =>
      r.forEach((id, t) => {
        ids[i * width + t] = BigInt(id);
        mask[i * width + t] = 1n;
      }),
    );
    const session = this.sessions.reduce((a, b) => (b.busy < a.busy ? b : a));
    const hidden = await session.run(ids, mask, [n, width]);
    return meanPool(hidden, mask, n, width, this.dimension).map(normalize);
  }
}

/**
 * The ONNX session, in a thread of its own: inference never blocks the event loop, and the native
 * binding sees plain Node typed arrays (under a test runner's VM context it would not). The thread's
 * code is a string, so the same code runs from TypeScript sources and from the build.
 */
class OnnxThread {
  private readonly worker: Worker;
  private next = 0;
  private readonly waiting = new Map<
    number,
    { resolve: (h: Float32Array) => void; reject: (e: Error) => void }
  >();

  /** Runs sent and not answered yet. */
  get busy(): number {
    return this.waiting.size;
  }

  constructor(model: string) {
    this.worker = new Worker(THREAD_CODE, {
      eval: true,
      workerData: { ort: require.resolve('onnxruntime-node'), model },
    });
    // An idle session must not keep a process alive.
    this.worker.unref();
    this.worker.on('message', (m: { id: number; hidden?: Float32Array; error?: string }) => {
      const w = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      if (!w) return;
      if (m.hidden) w.resolve(m.hidden);
      else w.reject(new Error(`the embedding model failed: ${m.error ?? 'unknown error'}`));
    });
    this.worker.on('error', (err) => this.failAll(err));
    this.worker.on('exit', () => this.failAll(new Error('the embedding thread exited')));
  }

  run(ids: BigInt64Array, mask: BigInt64Array, shape: number[]): Promise<Float32Array> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.worker.ref();
      this.worker.postMessage({ id, ids, mask, shape });
    }).finally(() => {
      if (this.waiting.size === 0) this.worker.unref();
    }) as Promise<Float32Array>;
  }

  ready(): Promise<void> {
    return this.run(new BigInt64Array([101n, 102n]), new BigInt64Array([1n, 1n]), [1, 2]).then(
      () => undefined,
    );
  }

  private failAll(err: Error): void {
    for (const w of this.waiting.values()) w.reject(err);
    this.waiting.clear();
  }
}

const THREAD_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const ort = require(workerData.ort);
// One thread: the process runs several sessions side by side instead (SESSIONS).
const session = ort.InferenceSession.create(workerData.model, {
  intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all',
  // Idle pool threads must sleep, not spin: they share two cores with the rest of the worker.
  extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } },
});
// One run at a time, in the order sent: a run waiting here starts as soon as the one before ends.
let last = Promise.resolve();
parentPort.on('message', (m) => {
  last = last.then(() => run(m));
});
async function run({ id, ids, mask, shape }) {
  try {
    const s = await session;
    const out = await s.run({
      input_ids: new ort.Tensor('int64', ids, shape),
      attention_mask: new ort.Tensor('int64', mask, shape),
      token_type_ids: new ort.Tensor('int64', new BigInt64Array(ids.length), shape),
    });
    const hidden = new Float32Array(out.last_hidden_state.data);
    parentPort.postMessage({ id, hidden }, [hidden.buffer]);
  } catch (err) {
    parentPort.postMessage({ id, error: String((err && err.message) || err) });
  }
}
`;

const loaded = new Map<string, Promise<Embedder>>();

/** The built-in embedder for the model files in `dir`, loaded once per process. */
export function builtinEmbedder(dir: string): Promise<Embedder> {
  let p = loaded.get(dir);
  if (!p) {
    p = load(dir);
    loaded.set(dir, p);
    p.catch(() => loaded.delete(dir));
  }
  return p;
}

async function load(dir: string): Promise<Embedder> {
  const missing = FILES.filter((f) => !existsSync(join(dir, f)));
  if (missing.length > 0) {
    throw new ServiceUnavailableError(
      'embedding',
      `the built-in embedding model is not installed in ${dir} (missing ${missing.join(', ')}): run \`scripts/services up models\` or set EMBEDDING_MODEL_DIR`,
    ).coded(EmbeddingErrorCode.Unavailable);
  }
  // Loaded with the model: a process that never embeds never pays for it.
  const { Tokenizer } = await import('@huggingface/tokenizers');
  const hf = new Tokenizer(
    JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')) as object,
    JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8')) as object,
  );
  const model = join(dir, 'model_quantized.onnx');
  const sessions = Array.from({ length: SESSIONS }, () => new OnnxThread(model));
  await Promise.all(sessions.map((s) => s.ready()));
  return new BuiltinEmbedder(hf, sessions);
}

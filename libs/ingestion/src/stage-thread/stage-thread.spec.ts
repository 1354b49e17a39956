import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import type { PipelineDefinition } from '@tapyard/model';
import { sendInput } from './input-channel';
import { StageThreadPool } from './stage-thread';

function definition(): PipelineDefinition {
  return {
    name: 'pooled',
    catalog: null,
    source: {
      fileAttributes: {
        format: 'csv',
        csvAttributes: { delimiter: ',', quote: '"', escape: null, header: true, encoding: 'utf-8' },
        unstructuredAttributes: null,
      },
      schemaProperties: {
        fields: [
          { name: 'id', type: 'int' },
          { name: 'label', type: 'string' },
        ],
      },
    },
    dataQuality: { rules: [], aiInstruction: null },
    transformation: { mappings: [], aiInstruction: null },
    destination: {},
  };
}

describe('the stage thread pool', () => {
  const dir = mkdtempSync(join(tmpdir(), 'stage-pool-'));
  const pool = new StageThreadPool();
  const idle = () => (pool as unknown as { idle: unknown[] }).idle.length;

  afterAll(async () => {
    await pool.onModuleDestroy();
    rmSync(dir, { recursive: true, force: true });
  });

  /** One small job read to its end on a pooled thread, with the pool's heap bound for it (1 GiB: none here reaches it). */
  async function job(maxHeapBytes: number): Promise<void> {
    const { port1, port2 } = new MessageChannel();
    const sending = sendInput(
      (async function* () {
        yield Buffer.from('id,label\n1,a\n2,b\n');
      })(),
      port1,
      new AbortController().signal,
    );
    const def = definition();
    const session = await pool.start(
      {
        input: port2,
        records: null,
        definition: def,
        filename: 'a.csv',
        rejectsPath: join(dir, 'rejects.jsonl'),
        spinOn: null,
        fast: false,
      },
      { stallMs: 60_000, maxIdle: 1, maxHeapBytes },
    );
    try {
      await session.first();
      await session.plan(def, ['id', 'label'], null, [], []);
      for (let i = 0; i < 10 && !session.finished; i++) {
        const r = await session.next();
        if ('end' in r) expect(r.end.rows).toBe(2);
      }
      expect(session.finished).toBe(true);
    } finally {
      session.end();
      await sending;
    }
  }

  it('reuses a thread after a clean job, unless its heap grew past the bound (then its memory goes with it)', async () => {
    await job(1 << 30);
    expect(idle()).toBe(1);
    // Any heap is past a bound of one byte: the thread is let go, not pooled.
    await job(1);
    expect(idle()).toBe(0);
    await job(1 << 30);
    expect(idle()).toBe(1);
  });
  it("takes a small job's whole input with its start, without an input channel", async () => {
    const def = definition();
    const bytes = new Uint8Array(Buffer.from('id,label\n1,a\n2,b\n3,c\n')).buffer;
    const session = await pool.start(
      {
        input: bytes,
        records: null,
        definition: def,
        filename: 'inline.csv',
        rejectsPath: join(dir, 'inline-rejects.jsonl'),
        spinOn: null,
        fast: false,
      },
      { stallMs: 60_000, maxIdle: 1, maxHeapBytes: 1 << 30 },
    );
    try {
      expect(await session.first()).toEqual({ header: ['id', 'label'], width: 2 });
      await session.plan(def, ['id', 'label'], null, [], []);
      let rows = -1;
      for (let i = 0; i < 10 && !session.finished; i++) {
        const r = await session.next();
        if ('end' in r) rows = r.end.rows;
      }
      expect(rows).toBe(3);
      // Transferred: the runner no longer holds the bytes.
      expect(bytes.byteLength).toBe(0);
    } finally {
      session.end();
    }
  });
});

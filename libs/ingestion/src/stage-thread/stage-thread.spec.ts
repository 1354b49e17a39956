import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { MessageChannel } from 'node:worker_threads';
import { JsonRowsPayload, encoderModule, jsonRowText } from '@tapyard/destinations';
import type { PipelineDefinition } from '@tapyard/model';
import { VenvCache, resolveInterpreter } from '@tapyard/sandbox';
import type { ScriptRunSpec } from '@tapyard/scripts';
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

/**
 * One small CSV job through a pooled thread, read to its end (each thread's session asks at most ten
 * times); the counts of its end, or null when it never ended, and the most heap the thread reported.
 */
async function runJob(
  pool: StageThreadPool,
  csv: string,
  rejectsPath: string,
  opts: { maxHeapBytes: number; scripts: ScriptRunSpec[] },
): Promise<{ rows: number; rejected: number; heapBytes: number } | null> {
  const { port1, port2 } = new MessageChannel();
  const sending = sendInput(
    (async function* () {
      yield Buffer.from(csv);
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
      rejectsPath,
      spinOn: null,
      fast: false,
    },
    // A thread past the bound collects as soon as it is idle, not seconds later.
    { stallMs: 60_000, maxIdle: 1, maxBusy: 4, maxHeapBytes: opts.maxHeapBytes, heapIdleMs: 0 },
  );
  try {
    await session.first();
    await session.plan(def, ['id', 'label'], null, [], opts.scripts);
    let end: { rows: number; rejected: number; heapBytes: number } | null = null;
    for (let i = 0; i < 10 && !session.finished; i++) {
      const r = await session.next();
      if ('end' in r) end = { ...r.end, heapBytes: (session as unknown as { heapBytes: number }).heapBytes };
    }
    return end;
  } finally {
    session.end();
    await sending;
  }
}

describe('the stage thread pool', () => {
  const dir = mkdtempSync(join(tmpdir(), 'stage-pool-'));
  const pool = new StageThreadPool();

  afterAll(async () => {
    await pool.onModuleDestroy();
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * One small job read to its end on a pooled thread, with the pool's heap bound for it (1 GiB: none
   * here reaches it); the most heap its thread held.
   */
  async function job(maxHeapBytes: number): Promise<number> {
    const end = await runJob(pool, 'id,label\n1,a\n2,b\n', join(dir, 'rejects.jsonl'), {
      maxHeapBytes,
      scripts: [],
    });
    expect(end?.rows).toBe(2);
    return end?.heapBytes ?? 0;
  }

  /**
   * The idle threads once a thread past the bound had the time to collect and say so (OVERSIZED): the
   * same for a second.
   */
  async function settledIds(): Promise<number[]> {
    let seen = idleIds();
    for (let still = 0; still < 10;) {
      await sleep(100);
      const now = idleIds();
      still = now.join() === seen.join() ? still + 1 : 0;
      seen = now;
    }
    return seen;
  }

  /** The ids of the idle threads, oldest first. */
  const idleIds = () =>
    (pool as unknown as { idle: { worker: { threadId: number } }[] }).idle.map((t) => t.worker.threadId);

  it('has a thread started before the first job, and the job runs on it', async () => {
    pool.onApplicationBootstrap();
    const [ready] = idleIds();
    expect(idleIds()).toHaveLength(1);
    await job(1 << 30);
    // The job took the started thread and gave it back after its clean end.
    expect(idleIds()).toEqual([ready]);
  });

  it('reuses a thread after a clean job, unless its heap stays past the bound (then a new one replaces it)', async () => {
    await job(1 << 30);
    const [used] = idleIds();
    expect(idleIds()).toHaveLength(1);
    // Any heap is past a bound of one byte, collected or not: the thread is let go, and a fresh one is
    // started for the next job.
    await job(1);
    expect(await settledIds()).toHaveLength(1);
    expect(idleIds()).not.toContain(used);
    const [fresh] = idleIds();
    await job(1 << 30);
    expect(await settledIds()).toEqual([fresh]);
  });

  it('keeps a thread whose heap passed the bound when its collection, once idle, brings it back within', async () => {
    const peak = await job(1 << 30);
    const [used] = idleIds();
    // The same job again passes a bound just under its peak; the collection after it shrinks the heap
    // (the young generation's pages above all) under the bound, so the warm thread stays. Without the
    // collection an idle thread's heap stays at its peak, and it would be let go.
    expect(await job(peak - 1)).toBeGreaterThan(peak - 1);
    expect(await settledIds()).toEqual([used]);
    await job(1 << 30);
    expect(idleIds()).toEqual([used]);
  });

  it('has a thread past the bound collect only once idle: a job started before then cancels it', async () => {
    await job(1 << 30);
    const [used] = idleIds();
    const run = (heapIdleMs: number) =>
      pool
        .start(
          {
            input: new Uint8Array(Buffer.from('id,label\n1,a\n')).buffer,
            records: null,
            definition: definition(),
            filename: 'a.csv',
            rejectsPath: join(dir, 'rejects.jsonl'),
            spinOn: null,
            fast: false,
          },
          { stallMs: 60_000, maxIdle: 1, maxBusy: 4, maxHeapBytes: 1, heapIdleMs },
        )
        .then(async (session) => {
          await session.first();
          await session.plan(definition(), ['id', 'label'], null, [], []);
          while (!session.finished) await session.next();
          session.end();
        });
    // Past a bound of one byte, its collection due in 300 ms: the thread stays pooled meanwhile, and the
    // next job, at once, takes it and cancels that collection (which would let it go); its own is due
    // in a minute.
    await run(300);
    expect(idleIds()).toEqual([used]);
    await run(60_000);
    expect(await settledIds()).toEqual([used]);
    // Due at once: the heap still past one byte after it, the thread is let go.
    await run(0);
    expect(await settledIds()).not.toContain(used);
  });

  it('never gives a job the thread of a job that ended before its input did', async () => {
    await job(1 << 30);
    const [used] = idleIds();
    const def = definition();
    const session = await pool.start(
      {
        input: new Uint8Array(Buffer.from('id,label\n1,a\n')).buffer,
        records: null,
        definition: def,
        filename: 'cut.csv',
        rejectsPath: join(dir, 'cut-rejects.jsonl'),
        spinOn: null,
        fast: false,
      },
      { stallMs: 60_000, maxIdle: 1, maxBusy: 4, maxHeapBytes: 1 << 30 },
    );
    await session.first();
    // Ended mid-job (a failed load): the thread may still be working on it.
    session.end();
    expect(idleIds()).toHaveLength(1);
    expect(idleIds()).not.toContain(used);
    await job(1 << 30);
  });

  it('keeps at most maxBusy threads busy: a job past it waits for one to end, first come first served', async () => {
    // A pool of its own: a process's jobs all give the same bound, and the shared pool's is 4.
    const bounded = new StageThreadPool();
    const start = (filename: string) =>
      bounded.start(
        {
          input: new Uint8Array(Buffer.from('id,label\n1,a\n')).buffer,
          records: null,
          definition: definition(),
          filename,
          rejectsPath: join(dir, `${filename}.jsonl`),
          spinOn: null,
          fast: false,
        },
        { stallMs: 60_000, maxIdle: 2, maxBusy: 2, maxHeapBytes: 1 << 30 },
      );
    const order: string[] = [];
    const a = await start('a.csv');
    const b = await start('b.csv');
    const c = start('c.csv').then((s) => (order.push('c'), s));
    const d = start('d.csv').then((s) => (order.push('d'), s));
    await new Promise((r) => setTimeout(r, 50));
    expect(order).toEqual([]);
    b.end();
    const third = await c;
    await new Promise((r) => setTimeout(r, 50));
    expect(order).toEqual(['c']);
    a.end();
    const fourth = await d;
    expect(order).toEqual(['c', 'd']);
    for (const s of [third, fourth]) {
      await s.first();
      s.end();
    }
    await bounded.onModuleDestroy();
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
      { stallMs: 60_000, maxIdle: 1, maxBusy: 4, maxHeapBytes: 1 << 30 },
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

describe("a destination's maxBatchRows on JSON rows", () => {
  const dir = mkdtempSync(join(tmpdir(), 'stage-cut-'));
  const pool = new StageThreadPool();

  afterAll(async () => {
    await pool.onModuleDestroy();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The json-rows payloads of a 10-row job cut to 3 rows at most: rows, lines and texts per payload. */
  async function payloadsOf(fast: boolean): Promise<{ rows: string[]; lines: number[] }[]> {
    const def = definition();
    const csv = `id,label\n${Array.from({ length: 10 }, (_, i) => `${i + 1},"r ""${i + 1}"" é"`).join('\n')}\n`;
    const session = await pool.start(
      {
        input: new Uint8Array(Buffer.from(csv)).buffer,
        records: null,
        definition: def,
        filename: 'cut.csv',
        rejectsPath: join(dir, `${fast}-rejects.jsonl`),
        spinOn: null,
        fast,
      },
      { stallMs: 60_000, maxIdle: 1, maxBusy: 4, maxHeapBytes: 1 << 30 },
    );
    const out: { rows: string[]; lines: number[] }[] = [];
    try {
      await session.first();
      await session.plan(
        def,
        ['id', 'label'],
        null,
        [{ module: encoderModule('json-rows'), maxBatchRows: 3, shape: null }],
        [],
      );
      for (let i = 0; i < 20 && !session.finished; i++) {
        const r = await session.next();
        if ('end' in r) break;
        // payloads[0]: the one destination's payloads of this batch.
        for (const p of r.payloads[0]) {
          const rows = p as JsonRowsPayload;
          out.push({
            rows: Array.from(rows.ends, (_, k) => jsonRowText(rows, k)),
            lines: Array.from(rows.lines),
          });
        }
      }
    } finally {
      session.end();
    }
    return out;
  }

  it.each([
    ['the CSV fast path', true],
    ['the typed path', false],
  ])('cuts every payload to at most that many rows, in order, on %s', async (_path, fast) => {
    const payloads = await payloadsOf(fast);
    expect(payloads.length).toBeGreaterThanOrEqual(4);
    for (const p of payloads) expect(p.rows.length).toBeLessThanOrEqual(3);
    expect(payloads.flatMap((p) => p.lines)).toEqual(Array.from({ length: 10 }, (_, i) => i + 2));
    expect(payloads.flatMap((p) => p.rows)).toEqual(
      Array.from({ length: 10 }, (_, i) => JSON.stringify({ id: i + 1, label: `r "${i + 1}" é` })),
    );
  });
});

/** The pids of the processes running as `uid` (a sandboxed script drops to its run's uid). */
async function processesOf(uid: number): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const status = await readFile(`/proc/${entry}/status`, 'utf8').catch(() => '');
    if (new RegExp(`^Uid:\\s+${uid}\\s`, 'm').test(status)) pids.push(Number(entry));
  }
  return pids.sort((a, b) => a - b);
}

/** A data-quality script's run in the real sandbox, as the uids first..last (a venv of its own in `dir`). */
async function sandboxSpec(dir: string, first: number, last: number): Promise<ScriptRunSpec> {
  chmodSync(dir, 0o755);
  const python = await resolveInterpreter(process.env.TAPYARD_SANDBOX_PYTHON ?? 'python3');
  const venv = await new VenvCache({ root: join(dir, 'venvs'), python }).ensure([]);
  return {
    kind: 'dataQuality',
    script: 'def check(rows):\n    return [None if r["label"] != "b" else "no b" for r in rows]\n',
    outputColumns: [],
    python: venv.python,
    venvDir: venv.dir,
    bwrap: 'require',
    uids: { first, last },
    limits: { timeoutMs: 60_000 },
    batchTimeoutMs: 30_000,
  };
}

/** The rejects' reasons of the last job that wrote `path`. */
async function reasonsIn(path: string): Promise<string[]> {
  return (await readFile(path, 'utf8'))
    .trim()
    .split('\n')
    .map((line) => (JSON.parse(line) as { reason: string }).reason);
}

/** A script rejecting every row with the uid it runs as. */
const BY_UID = 'import os\n\ndef check(rows):\n    return ["uid %d" % os.getuid() for r in rows]\n';

describe('a job warming its scripts', () => {
  const dir = mkdtempSync(join(tmpdir(), 'stage-warm-'));
  const pool = new StageThreadPool();
  let spec: ScriptRunSpec;
  // A uid of its own for the run: the only one, so a second process for the script could not start.
  const uid = 1_900_000_000 + Math.floor(Math.random() * 1_000_000);

  beforeAll(async () => {
    spec = await sandboxSpec(dir, uid, uid);
  });
  afterAll(async () => {
    await pool.onModuleDestroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('starts them before the input can be read, and plan runs those very processes', async () => {
    const { port1, port2 } = new MessageChannel();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const sending = sendInput(
      (async function* () {
        await gate;
        yield Buffer.from('id,label\n1,a\n2,b\n3,c\n');
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
      { stallMs: 60_000, maxIdle: 1, maxBusy: 4, maxHeapBytes: 1 << 30 },
    );
    try {
      session.warm([spec]);
      // The input has not sent a byte yet: the script's process comes up regardless.
      let warmed: number[] = [];
      for (let i = 0; i < 600 && warmed.length === 0; i++) {
        warmed = await processesOf(uid);
        if (warmed.length === 0) await sleep(50);
      }
      expect(warmed.length).toBeGreaterThan(0);
      open();
      await session.first();
      await session.plan(def, ['id', 'label'], null, [], [spec]);
      // The run's only uid is the warmed process's: plan took it rather than start another.
      expect(await processesOf(uid)).toEqual(warmed);
      let rejected = -1;
      for (let i = 0; i < 10 && !session.finished; i++) {
        const r = await session.next();
        if ('end' in r) rejected = r.end.rejected;
      }
      expect(rejected).toBe(1);
    } finally {
      session.end();
      open();
      await sending;
    }
  });
});

/**
 * A pool of the describe block's own and a data-quality script's run with two uids of its own: the job's
 * script, and the warm sandbox started for the next job. `spec()` once beforeAll ran.
 */
function sparesSuite(prefix: string): {
  dir: string;
  pool: StageThreadPool;
  uids: number[];
  spec: () => ScriptRunSpec;
} {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const pool = new StageThreadPool();
  const first = 1_900_000_000 + 2 * Math.floor(Math.random() * 500_000);
  let spec: ScriptRunSpec | null = null;
  beforeAll(async () => {
    spec = await sandboxSpec(dir, first, first + 1);
  });
  afterAll(async () => {
    await pool.onModuleDestroy();
    rmSync(dir, { recursive: true, force: true });
  });
  return { dir, pool, uids: [first, first + 1], spec: () => spec as ScriptRunSpec };
}

describe('warm sandboxes between jobs', () => {
  const { dir, pool, uids, spec } = sparesSuite('stage-spare-');
  const processes = async () => (await Promise.all(uids.map(processesOf))).flat();

  /** A job of three rows through the script on the pool's one thread; its rejected count. */
  async function job(script: string): Promise<number> {
    const end = await runJob(pool, 'id,label\n1,a\n2,b\n3,c\n', join(dir, 'rejects.jsonl'), {
      maxHeapBytes: 1 << 30,
      scripts: [{ ...spec(), script }],
    });
    return end?.rejected ?? -1;
  }

  it('starts one after a job, hands it to the next job once, and stops it (uid given back) when the thread is let go', async () => {
    const reasons = () => reasonsIn(join(dir, 'rejects.jsonl'));
    expect(await job(BY_UID)).toBe(3);
    const [used] = await reasons();
    const spareUid = uids.find((u) => `uid ${u}` !== used) as number;
    // The job's own script leaves; a warm process (the harness waiting for a script) comes up as the other uid.
    for (let i = 0; i < 600; i++) {
      const [mine, spare] = await Promise.all(
        [uids.find((u) => u !== spareUid) as number, spareUid].map(processesOf),
      );
      if (mine.length === 0 && spare.length === 1) break;
      await sleep(50);
    }
    expect(await processes()).toEqual(await processesOf(spareUid));
    expect(await processesOf(spareUid)).toHaveLength(1);
    // Another pipeline's script (another tenant's, as far as the sandbox knows) runs in that very process:
    // its uid was held by the warm one, so a sandbox started for the job would have had the other.
    expect(await job(BY_UID.replace('"uid %d"', '"then uid %d"'))).toBe(3);
    expect(await reasons()).toEqual([`then uid ${spareUid}`, `then uid ${spareUid}`, `then uid ${spareUid}`]);
    await pool.onModuleDestroy();
    // Nothing runs as either uid, and no lease file of this process holds them.
    expect(await processes()).toEqual([]);
    const leases = (await readdir('/run/tapyard/sandbox-uids')).filter((f) =>
      uids.some((u) => f.startsWith(`${u}.${process.pid}.`)),
    );
    expect(leases).toEqual([]);
  });
});

describe('warm sandboxes past a thread let go for its heap', () => {
  const { dir, pool, uids, spec } = sparesSuite('stage-handover-');

  /** A job through the script whose heap passes the bound (1 byte): its thread is let go after it. */
  async function job(script: string): Promise<string[]> {
    const rejects = join(dir, 'rejects.jsonl');
    await runJob(pool, 'id,label\n1,a\n2,b\n', rejects, {
      maxHeapBytes: 1,
      scripts: [{ ...spec(), script }],
    });
    return reasonsIn(rejects);
  }

  /**
   * The uid of the one process running as either uid once the job's own has left, or null: the same
   * one process seen twice, 500 ms apart (under load the job's own may still be leaving while the spare
   * is not up yet, and one process is then the leaving one).
   */
  async function waiting(): Promise<{ uid: number; pids: number[] } | null> {
    const single = async () => {
      const [a, b] = await Promise.all(uids.map(processesOf));
      return a.length + b.length === 1
        ? { uid: a.length === 1 ? uids[0] : uids[1], pids: [...a, ...b] }
        : null;
    };
    for (let i = 0; i < 200; i++) {
      const seen = await single();
      if (seen !== null) {
        await sleep(500);
        const again = await single();
        if (again !== null && again.pids[0] === seen.pids[0]) return seen;
      }
      await sleep(50);
    }
    return null;
  }

  it('has the thread replacing it start one for the kinds of script it ran, and the next job runs in it', async () => {
    expect(await job(BY_UID)).toHaveLength(2);
    // The let-go thread's own spares die with it; this one is the successor's, so it stays.
    const spare = await waiting();
    expect(spare).not.toBeNull();
    await sleep(1000);
    expect(await processesOf(spare?.uid ?? -1)).toEqual(spare?.pids);
    expect(await job(BY_UID.replace('"uid %d"', '"then uid %d"'))).toEqual([
      `then uid ${spare?.uid}`,
      `then uid ${spare?.uid}`,
    ]);
  });
});

describe('a stage thread that ends without stopping its warm sandbox', () => {
  const { dir, pool, uids, spec } = sparesSuite('stage-ended-');
  const processes = async () => (await Promise.all(uids.map(processesOf))).flat();
  const leases = async () =>
    (await readdir('/run/tapyard/sandbox-uids')).filter((f) =>
      uids.some((u) => f.startsWith(`${u}.${process.pid}.`)),
    );

  it('gives its uids back and stops what ran as them (a thread exiting while idle, as when terminated)', async () => {
    const rejects = join(dir, 'rejects.jsonl');
    await runJob(pool, 'id,label\n1,a\n', rejects, {
      maxHeapBytes: 1 << 30,
      scripts: [{ ...spec(), script: BY_UID }],
    });
    // The job's own sandbox leaves; the warm one, as the other uid, waits for the next job's script.
    const [used] = await reasonsIn(rejects);
    const own = uids.find((u) => `uid ${u}` === used) as number;
    const spare = uids.find((u) => u !== own) as number;
    const settled = async () =>
      (await processesOf(own)).length === 0 && (await processesOf(spare)).length === 1;
    for (let i = 0; i < 600 && !(await settled()); i++) await sleep(50);
    expect(await processes()).toEqual(await processesOf(spare));
    expect(await processes()).toHaveLength(1);
    expect(await leases()).toHaveLength(1);
    // The thread ends without a word (the watchdog's terminate, a crash): it never stopped its sandbox.
    const idle = (pool as unknown as { idle: { worker: { terminate(): Promise<number> } }[] }).idle;
    expect(idle).toHaveLength(1);
    await idle[0].worker.terminate();
    for (let i = 0; i < 300 && ((await processes()).length > 0 || (await leases()).length > 0); i++)
      await sleep(50);
    expect(await processes()).toEqual([]);
    expect(await leases()).toEqual([]);
  });
});

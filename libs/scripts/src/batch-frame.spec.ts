import { execFile } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FieldType, SchemaField, TypedBatch, Value } from '@tapyard/model';
import { VenvCache, resolveInterpreter, type Venv } from '@tapyard/sandbox';
import { batchFrame } from './batch-frame';
import { RunningScript, ScriptFailure } from './script-runner';
import type { CodegenKind } from './script-contract';

const py = (...lines: string[]): string => `${lines.join('\n')}\n`;

/** A small seeded generator: the same batches on every run. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const TEXTS = [
  '',
  'plain',
  'é ÿ',
  '€ 中文',
  '😀 astral',
  'lone \ud800 high',
  'low \udc00',
  'nl\nq"\\',
  'tab\t',
];
const DOUBLES = [
  0,
  -0,
  3,
  -2.5,
  0.1,
  1e20,
  2 ** 53,
  2 ** 53 + 2,
  1e21,
  1.5e300,
  5e-324,
  1.7976931348623157e308,
];

/**
 * Columns of every type, their values drawn from the kinds each encoding must carry exactly: nulls,
 * integers beyond 2^53 as numbers and as BigInts, integral doubles (Python reads those as ints),
 * -0, text in latin-1, the BMP, astral planes and lone surrogates, NUL. Some columns mix kinds or
 * hold a NUL, so the JSON fallback is crossed too.
 */
function typedBatch(seed: number, rows: number): TypedBatch {
  const r = random(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
  const maybe = (v: () => Value): Value => (r() < 0.15 ? null : v());
  const text = (): string =>
    Array.from({ length: 1 + Math.floor(r() * 3) }, () => pick(TEXTS)).join(pick(['', ' ', '-']));
  const columns: [string, FieldType, () => Value][] = [
    ['id', 'int', () => Math.floor(r() * 2 ** 32) - 2 ** 31],
    [
      'big',
      'bigint',
      () =>
        r() < 0.5
          ? Math.floor(r() * 2 ** 53) * pick([1, -1])
          : BigInt(2 ** 53) * BigInt(1 + Math.floor(r() * 1000)) + 1n,
    ],
    ['small_big', 'bigint', () => Math.floor(r() * 2 ** 53) - 2 ** 52],
    ['amount', 'double', () => (r() < 0.3 ? Math.round(r() * 1000) : r() * 1e6 - 5e5)],
    ['edge', 'double', () => pick(DOUBLES.filter((d) => d < 1e20 || d >= 1e21)) * pick([1, -1])],
    ['wide', 'double', () => pick(DOUBLES)],
    ['ratio', 'float', () => Math.fround(r() * 10)],
    ['flag', 'boolean', () => r() < 0.5],
    ['latin', 'string', () => pick(['abc', 'é', 'ÿ x', ''])],
    ['label', 'string', text],
    ['nul', 'string', () => (r() < 0.1 ? 'a\0b' : text())],
    ['day', 'date', () => `2026-0${1 + Math.floor(r() * 9)}-1${Math.floor(r() * 10)}`],
    ['at', 'timestamp', () => `2026-03-01T09:${10 + Math.floor(r() * 50)}:00Z`],
    ['price', 'decimal', () => (r() * 1000).toFixed(2)],
    ['mixed', 'string', () => (r() < 0.5 ? text() : Math.round(r() * 100))],
    ['nothing', 'int', () => null],
    ['ünï 😀', 'string', text],
  ];
  return {
    columns: columns.map(([name, type]) => ({ name, type })),
    values: columns.map(([, , gen]) => Array.from({ length: rows }, () => maybe(gen))),
    lines: Array.from({ length: rows }, (_, i) => i + 2),
  };
}

/** The former encoding, kept as the reference: one JSON array per column, bigints as exact integers. */
function jsonLine(batch: TypedBatch): string {
  const columns = batch.values.map((col, c) =>
    batch.columns[c].type === 'bigint'
      ? `[${col.map((v) => (typeof v === 'bigint' ? v.toString() : JSON.stringify(v))).join(',')}]`
      : JSON.stringify(col),
  );
  return `{"names":${JSON.stringify(batch.columns.map((c) => c.name))},"columns":[${columns.join(',')}]}`;
}

/** What a row is, exactly, to Python: its repr (types included), hashed. */
const ROW_DIGEST = 'hashlib.sha256(repr(r).encode("utf-8", "surrogatepass")).hexdigest()';

/** The rows the former encoding gave a script, built by plain Python from the JSON lines. */
function referenceDigests(python: string, batches: TypedBatch[]): Promise<string[][]> {
  const program = py(
    'import hashlib, json, sys',
    'for line in sys.stdin:',
    '    b = json.loads(line)',
    '    rows = [dict(zip(b["names"], values)) for values in zip(*b["columns"])]',
    `    print(json.dumps([${ROW_DIGEST} for r in rows]))`,
  );
  return new Promise((resolve, reject) => {
    const child = execFile(python, ['-c', program], { maxBuffer: 1 << 26 }, (err, stdout) => {
      if (err) reject(err);
      else
        resolve(
          stdout
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l) as string[]),
        );
    });
    child.stdin?.end(batches.map(jsonLine).join('\n') + '\n');
  });
}

function encodings(frame: Buffer): string[] {
  const header = JSON.parse(frame.subarray(8, 8 + frame.readUInt32LE(4)).toString()) as {
    columns: [string][];
  };
  return header.columns.map((c) => c[0]);
}

describe('the binary batch frame', () => {
  let root: string;
  let venv: Venv;
  let python: string;
  const running: RunningScript[] = [];
  const batches = [1, 7, 300, 2000].map((rows, i) => typedBatch(i + 1, rows));
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'tapyard-frames-'));
    await chmod(root, 0o755);
    python = await resolveInterpreter(process.env.TAPYARD_SANDBOX_PYTHON ?? 'python3');
    venv = await new VenvCache({ root, python }).ensure([]);
  });
  afterAll(async () => {
    for (const r of running) r.kill();
    await rm(root, { recursive: true, force: true });
  });

  async function start(kind: CodegenKind, script: string, outputColumns: SchemaField[] = []) {
    const r = await RunningScript.start({
      kind,
      script,
      outputColumns,
      python: venv.python,
      venvDir: venv.dir,
      bwrap: 'require',
      limits: { timeoutMs: 60_000, maxRecordBytes: 1 << 26, maxOutputBytes: Number.MAX_SAFE_INTEGER },
      batchTimeoutMs: 30_000,
    });
    running.push(r);
    return r;
  }

  it('crosses every packing and the JSON fallback', () => {
    const used = new Set(batches.flatMap((b) => encodings(batchFrame(b, []))));
    expect([...used].sort()).toEqual(['b1', 'f8', 'i4', 'i8', 'json', 's1', 's2']);
    // Integral doubles from 2^53 to 1e21 (JSON writes digits Python reads as another int) stay JSON.
    const wide = batches[3].columns.findIndex((c) => c.name === 'wide');
    expect(encodings(batchFrame(batches[3], []))[wide]).toBe('json');
  });

  it('gives a script exactly the row dicts the JSON encoding gave (types, big ints, -0, unicode, surrogates, NUL)', async () => {
    const expected = await referenceDigests(python, batches);
    const script = await start(
      'dataQuality',
      py('import hashlib', '', 'def check(rows):', `    return [${ROW_DIGEST} for r in rows]`),
    );
    for (const [k, batch] of batches.entries()) {
      const out = await script.apply(batch);
      expect(out.rejects.rows).toEqual(batch.lines.map((_, i) => i));
      expect(out.rejects.reasons).toEqual(expected[k]);
    }
    await script.close();
  });

  it('passes a batch whose rows all pass as it is', async () => {
    const script = await start('dataQuality', py('def check(rows):', '    return [None for r in rows]'));
    const out = await script.apply(batches[2]);
    expect(out.batch).toBe(batches[2]);
    expect(out.rejects).toEqual({ rows: [], reasons: [] });
    await script.close();
  });

  it('brings a transformation’s numbers back as the JSON text of them would, and the columns it kept exactly', async () => {
    const script = await start(
      'transformation',
      py(
        'import json',
        'OUTPUT_COLUMNS = {"d2": "double", "d2_json": "string", "n": "bigint", "n_json": "string"}',
        '',
        'def transform(rows):',
        '    out = []',
        '    for r in rows:',
        '        v = r["amount"]',
        '        d2 = None if v is None else v * 3 if isinstance(v, int) else v / 7',
        '        n = None if r["small_big"] is None else r["small_big"] * 2',
        '        out.append(dict(r, d2=d2, d2_json=json.dumps(d2), n=n, n_json=json.dumps(n)))',
        '    return out',
      ),
      [
        { name: 'd2', type: 'double' },
        { name: 'd2_json', type: 'string' },
        { name: 'n', type: 'bigint' },
        { name: 'n_json', type: 'string' },
      ],
    );
    for (const batch of batches) {
      const out = await script.apply(batch);
      const inputs = batch.columns.length;
      expect(out.batch.values.slice(0, inputs)).toEqual(batch.values);
      const [d2, d2Json, n, nJson] = out.batch.values.slice(inputs);
      // What the former answer gave: the JSON number as JSON.parse reads it.
      expect(d2).toEqual(d2Json.map((t) => JSON.parse(t as string) as number | null));
      expect(n).toEqual(nJson.map((t) => JSON.parse(t as string) as number | null));
      expect(out.rejects.rows).toEqual([]);
    }
    await script.close();
  });

  it('still refuses what JSON refused: a NaN fails the batch, as its JSON encoding did', async () => {
    const script = await start(
      'transformation',
      py(
        'OUTPUT_COLUMNS = {"x": "double"}',
        '',
        'def transform(rows):',
        '    return [dict(r, x=float("nan") if i == 1 else 1.5) for i, r in enumerate(rows)]',
      ),
      [{ name: 'x', type: 'double' }],
    );
    await expect(script.apply(batches[1])).rejects.toThrow(ScriptFailure);
    await expect(script.apply(batches[1])).rejects.toThrow(/not JSON/);
    script.kill();
  });
});

import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SchemaField, TypedBatch } from '@tapyard/model';
import { VenvCache, resolveInterpreter, type Venv } from '@tapyard/sandbox';
import { RunningScript, ScriptFailure, WarmScript, type ScriptRunSpec } from './script-runner';
import type { CodegenKind } from './script-contract';

const COLUMNS: SchemaField[] = [
  { name: 'id', type: 'int' },
  { name: 'big', type: 'bigint' },
  { name: 'amount', type: 'double' },
  { name: 'label', type: 'string' },
  { name: 'day', type: 'date' },
];
const BIG = 9007199254740993n;
const py = (...lines: string[]): string => `${lines.join('\n')}\n`;

/** Four rows; the second has nulls, the third a bigint beyond 2^53. */
function batch(): TypedBatch {
  return {
    columns: COLUMNS,
    values: [
      [1, 2, 3, 4],
      [10, null, BIG, -5],
      [1.5, null, 2.25, -0.5],
      ['a', null, 'c', 'd'],
      ['2026-03-01', null, '2026-03-03', '2026-03-04'],
    ],
    lines: [2, 3, 4, 5],
  };
}

/** Real scripts in the real sandbox (bwrap), fed through the driver the stage thread uses. */
describe('RunningScript', () => {
  let root: string;
  let venv: Venv;
  const running: RunningScript[] = [];
  beforeAll(async () => {
    // The venv's directory is mounted into the sandbox, whose user must be able to read it.
    root = await mkdtemp(join(tmpdir(), 'tapyard-scripts-'));
    await chmod(root, 0o755);
    const python = await resolveInterpreter(process.env.TAPYARD_SANDBOX_PYTHON ?? 'python3');
    venv = await new VenvCache({ root, python }).ensure([]);
  });
  afterAll(async () => {
    for (const r of running) r.kill();
    await rm(root, { recursive: true, force: true });
  });

  function spec(kind: CodegenKind, script: string, outputColumns: SchemaField[] = []): ScriptRunSpec {
    return {
      kind,
      script,
      outputColumns,
      python: venv.python,
      venvDir: venv.dir,
      bwrap: 'require',
      limits: { timeoutMs: 60_000, maxRecordBytes: 1 << 24, maxOutputBytes: Number.MAX_SAFE_INTEGER },
      batchTimeoutMs: 30_000,
    };
  }

  async function start(kind: CodegenKind, script: string, outputColumns: SchemaField[] = []) {
    const r = await RunningScript.start(spec(kind, script, outputColumns));
    running.push(r);
    return r;
  }

  /** The script in a sandbox started before it was known (as the stage thread's warm ones are). */
  async function warm(kind: CodegenKind, script: string, outputColumns: SchemaField[] = []) {
    const s = spec(kind, script, outputColumns);
    const sandbox = WarmScript.start(s);
    const r = await sandbox.take(s);
    if (r === null) throw new Error('the warm sandbox was gone');
    running.push(r);
    // Handed over once: a second script never gets the same sandbox.
    expect(await sandbox.take(s)).toBeNull();
    return r;
  }

  it('runs a script handed to a warm sandbox as a fresh start runs it: same rows, same failures and traceback', async () => {
    const transform = py(
      'OUTPUT_COLUMNS = {"twice": "double"}',
      '',
      'def transform(rows):',
      '    return [None if r["id"] == 2 else dict(r, twice=(r["amount"] or 0) * 2) for r in rows]',
    );
    const columns: SchemaField[] = [{ name: 'twice', type: 'double' }];
    const cold = await start('transformation', transform, columns);
    const hot = await warm('transformation', transform, columns);
    expect(await hot.apply(batch())).toEqual(await cold.apply(batch()));
    await Promise.all([cold.close(), hot.close()]);

    const failing = py('def check(rows):', '    return [rows[0]["label"] + 1 for r in rows]');
    const errors = await Promise.all(
      [start, warm].map(async (begin) => {
        const script = await begin('dataQuality', failing);
        const err = await script.apply(batch()).catch((e: unknown) => e);
        script.kill();
        return err;
      }),
    );
    expect(errors[0]).toBeInstanceOf(ScriptFailure);
    expect((errors[1] as Error).message).toBe((errors[0] as Error).message);
    // The script's own line is quoted, though the warm sandbox never had a file of it.
    expect((errors[1] as Error).message).toContain('File "data_quality.py", line 2, in check');
    expect((errors[1] as Error).message).toContain('return [rows[0]["label"] + 1 for r in rows]');

    const syntax = await warm('dataQuality', py('def check(rows)', '    return []'));
    await expect(syntax.apply(batch())).rejects.toThrow(/syntax error on line 1/);
    syntax.kill();
  });

  it('gives every job a sandbox of its own: what one script left in its module and its /tmp, the next one never sees', async () => {
    const leave = py(
      'import builtins',
      '',
      'def check(rows):',
      '    builtins.LEFT_BEHIND = "secret of job 1"',
      '    with open("/tmp/left-behind", "w") as f:',
      '        f.write("secret of job 1")',
      '    return [None] * len(rows)',
    );
    const look = py(
      'import builtins, os',
      '',
      'def check(rows):',
      '    seen = [hasattr(builtins, "LEFT_BEHIND"), os.path.exists("/tmp/left-behind")]',
      '    return ["saw what job 1 left: %r" % seen if any(seen) else None for r in rows]',
    );
    const first = await warm('dataQuality', leave);
    expect((await first.apply(batch())).rejects.rows).toEqual([]);
    // Job 1's script is still alive while the next warm sandbox is taken (as under concurrency).
    const second = await warm('dataQuality', look);
    const seen = await second.apply(batch());
    expect(seen.rejects.reasons).toEqual([]);
    expect(seen.batch.lines).toEqual([2, 3, 4, 5]);
    await Promise.all([first.close(), second.close()]);
  });

  it('gives a data-quality script every row as a dict of typed values and keeps the rows it passes', async () => {
    const script = await start(
      'dataQuality',
      py(
        'def check(rows):',
        '    out = []',
        '    for r in rows:',
        '        if r["big"] is None:',
        '            out.append("big is missing")',
        '        elif r["big"] == 9007199254740993 and r["day"] == "2026-03-03" and r["amount"] == 2.25:',
        '            out.append(None)',
        '        else:',
        '            out.append(False if r["id"] == 4 else None)',
        '    return out',
      ),
    );
    const out = await script.apply(batch());
    expect(out.batch.lines).toEqual([2, 4]);
    expect(out.batch.values[1]).toEqual([10, BIG]);
    expect(out.rejects).toEqual({
      rows: [1, 3],
      reasons: ['big is missing', 'rejected by the data-quality script'],
    });
    await script.close();
  });

  it('types a transformation’s rows: added and changed values checked, unchanged ones kept exactly, None rows and bad values rejected in row order', async () => {
    const script = await start(
      'transformation',
      py(
        'OUTPUT_COLUMNS = {"twice": "double", "tag": "string"}',
        '',
        'def transform(rows):',
        '    out = []',
        '    for r in rows:',
        '        if r["id"] == 2:',
        '            out.append(None)',
        '            continue',
        '        r = dict(r, twice=r["amount"] * 2, tag="t%d" % r["id"])',
        '        if r["id"] == 4:',
        '            r["day"] = "not a date"',
        '        if r["id"] == 1:',
        '            r["amount"] = 7',
        '        out.append(r)',
        '    return out',
      ),
      [
        { name: 'twice', type: 'double' },
        { name: 'tag', type: 'string' },
      ],
    );
    const out = await script.apply(batch());
    expect(out.batch.columns.map((c) => c.name)).toEqual([
      'id',
      'big',
      'amount',
      'label',
      'day',
      'twice',
      'tag',
    ]);
    expect(out.batch.lines).toEqual([2, 4]);
    // The bigint beyond 2^53 comes back to the digit (JSON numbers would round it).
    expect(out.batch.values).toEqual([
      [1, 3],
      [10, BIG],
      [7, 2.25],
      ['a', 'c'],
      ['2026-03-01', '2026-03-03'],
      [3, 4.5],
      ['t1', 't3'],
    ]);
    expect(out.rejects.rows).toEqual([1, 3]);
    expect(out.rejects.reasons[0]).toBe('the transformation rejected this row');
    expect(out.rejects.reasons[1]).toMatch(/^column 'day' after the transformation: /);
    // A second batch through the same process.
    const again = await script.apply(batch());
    expect(again.batch.lines).toEqual([2, 4]);
    await script.close();
  });

  it('names what is wrong with a transformation’s answer: a left-out column rejects the row, a non-dict row fails the batch', async () => {
    const leaves = await start(
      'transformation',
      py(
        'OUTPUT_COLUMNS = {"extra": "int"}',
        '',
        'def transform(rows):',
        '    return [dict(r, extra=1) if r["id"] != 3 else {"id": 3} for r in rows]',
      ),
      [{ name: 'extra', type: 'int' }],
    );
    const out = await leaves.apply(batch());
    expect(out.batch.lines).toEqual([2, 3, 5]);
    expect(out.batch.values[5]).toEqual([1, 1, 1]);
    expect(out.rejects).toEqual({ rows: [2], reasons: ["transform() left out column 'big'"] });
    await leaves.close();

    const lists = await start(
      'transformation',
      py('OUTPUT_COLUMNS = {}', '', 'def transform(rows):', '    return [list(r.values()) for r in rows]'),
    );
    await expect(lists.apply(batch())).rejects.toThrow(
      new ScriptFailure('transform() must return a dict (or None) per row; row 0 is a list'),
    );
    lists.kill();

    const short = await start('dataQuality', py('def check(rows):', '    return [None]'));
    await expect(short.apply(batch())).rejects.toThrow(
      'check() must return a list with one entry per row (4 rows), got 1 entries',
    );
    short.kill();
  });

  /** A script that writes its own line to the record channel (fd 3) before the driver answers. */
  function forger(line: string): string {
    return py(
      'import os',
      '',
      'OUTPUT_COLUMNS = {"extra": "double"}',
      '',
      'def transform(rows):',
      `    os.write(3, ${JSON.stringify(line + '\n')}.encode())`,
      '    return [dict(r, extra=1.5) for r in rows]',
    );
  }

  it('fails the batch, naming the driver’s answer, when the script forges a packed answer on its record channel', async () => {
    const extra: SchemaField[] = [{ name: 'extra', type: 'double' }];
    const packed = (values: number[]): { f8: string; nulls: number[] } => ({
      f8: Buffer.from(new Float64Array(values).buffer).toString('base64'),
      nulls: [],
    });
    // Four rows: an answer dropping row 7 would load all four and report a rejected row that is not there.
    for (const forged of [
      { columns: [null, null, null, null, null, packed([1, 2, 3, 4])], dropped: [7] },
      { columns: [null, null, null, null, null, packed([1, 2])], dropped: [1, 1] },
      { columns: [null, null, null, null, null, packed([1, 2, 3, 4, 5, 6, 7, 8])], dropped: [] },
      { columns: [null, null, null, null, null, { f8: 'AAAA', nulls: [] }], dropped: [] },
      { columns: [null, null, null, null, null, packed([1, 2, 3, 4])], dropped: ['x'] },
    ]) {
      const script = await start('transformation', forger(JSON.stringify(forged)), extra);
      await expect(script.apply(batch())).rejects.toThrow(
        new ScriptFailure('the transformation driver answered a malformed batch'),
      );
      // The script's own answer still on its way is never taken for the next batch's: the run is over.
      await expect(script.apply(batch())).rejects.toThrow(
        new ScriptFailure('the transformation driver answered a malformed batch'),
      );
      script.kill();
    }
  });

  it('stops a run whose script forges a line that is not JSON on its record channel', async () => {
    const script = await start('transformation', forger('log text in the channel'), [
      { name: 'extra', type: 'double' },
    ]);
    await expect(script.apply(batch())).rejects.toThrow(/corrupted its record channel/);
    script.kill();
  });

  it('fails the call at once when the script forges the harness’s "done" line and blocks', async () => {
    const script = await start(
      'transformation',
      py(
        'import os, time',
        '',
        'OUTPUT_COLUMNS = {"extra": "double"}',
        '',
        'def transform(rows):',
        `    os.write(3, b'!{"type":"done","records":0}\\n')`,
        // Blocked past the call's timeout (30 s): only the forged line can end the call before it.
        '    time.sleep(600)',
      ),
      [{ name: 'extra', type: 'double' }],
    );
    await expect(script.apply(batch())).rejects.toThrow(
      new ScriptFailure("the script's fetch() ended after answering 0 calls; it answers no more"),
    );
    script.kill();
  });
});

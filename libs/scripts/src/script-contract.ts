/**
 * The CodeGen script contract: what an AI-written data-quality or transformation script must define,
 * what it is given and what it returns. Versioned: a script written for another version of this
 * contract is not restored (422), and the prompt, the static checks, the driver and the stage thread
 * all read their rules from here. Plain code (no Nest): the stage thread imports it too.
 */
import { createHash } from 'node:crypto';
import type { FieldType, SchemaField } from '@tapyard/model';

export const CONTRACT_VERSION = 1;

export const CODEGEN_KINDS = ['dataQuality', 'transformation'] as const;
export type CodegenKind = (typeof CODEGEN_KINDS)[number];

export function isCodegenKind(v: string): v is CodegenKind {
  return (CODEGEN_KINDS as readonly string[]).includes(v);
}

/** The file a kind is stored as (object store and code repository alike). */
export const SCRIPT_FILES: Record<CodegenKind, string> = {
  dataQuality: 'data-quality.py',
  transformation: 'transformation.py',
};

/** The stage a kind runs in, for status entries and rejects. */
export const KIND_STAGES: Record<CodegenKind, 'DataQuality' | 'Transformation'> = {
  dataQuality: 'DataQuality',
  transformation: 'Transformation',
};

/** The function the contract requires of each kind. */
export const ENTRY_POINTS: Record<CodegenKind, string> = {
  dataQuality: 'check',
  transformation: 'transform',
};

/**
 * Standard-library modules a script may import: computation on values, nothing that reaches files,
 * processes or the network (the sandbox has no network for these scripts anyway; the list makes a
 * script that tries fail its checks with a reason instead of failing at run time).
 */
export const ALLOWED_IMPORTS: readonly string[] = [
  '__future__',
  'bisect',
  'calendar',
  'collections',
  'dataclasses',
  'datetime',
  'decimal',
  'difflib',
  'enum',
  'fractions',
  'functools',
  'hashlib',
  'heapq',
  'ipaddress',
  'itertools',
  'json',
  'math',
  'operator',
  'random',
  're',
  'statistics',
  'string',
  'textwrap',
  'typing',
  'unicodedata',
  'uuid',
  'zoneinfo',
];

/** The contract as the model reads it (and docs/codegen.md documents it). */
export function contractText(kind: CodegenKind, columns: readonly SchemaField[]): string {
  const cols = columns.map((c) => `  - ${c.name}: ${c.type} (${PY_TYPES[c.type]})`).join('\n');
  const common =
    `Script contract version ${CONTRACT_VERSION}.\n` +
    `Each call gets one batch: a list of rows, each a dict of column name to value (None for NULL). Columns:\n${cols}\n` +
    `Imports: only these standard-library modules: ${ALLOWED_IMPORTS.join(', ')}. No files, no network, no ` +
    `subprocesses, no exec/eval. Module-level code runs once per job; keep state out of it.\n`;
  if (kind === 'dataQuality') {
    return (
      common +
      `Define \`def check(rows):\` returning a list with exactly one entry per row, in order: None when the row ` +
      `passes, or a short reason (str, one sentence naming the column and the problem) when it is rejected. ` +
      `Rejected rows are kept in the pipeline's rejects with that reason.`
    );
  }
  return (
    common +
    `Define \`OUTPUT_COLUMNS = {"name": "type", ...}\` at module level: the columns the script adds, each with a ` +
    `type from ${FIELD_TYPE_LIST} (a literal dict; {} when none are added; names not already columns).\n` +
    `Define \`def transform(rows):\` returning a list with exactly one entry per row, in order: the row as a ` +
    `dict with every input column (values may change but must stay of their column's type) and every ` +
    `OUTPUT_COLUMNS column, or None to reject the row (it is kept in the rejects).`
  );
}

const PY_TYPES: Record<FieldType, string> = {
  boolean: 'bool',
  int: 'int',
  bigint: 'int',
  float: 'float',
  double: 'float',
  string: 'str',
  date: "str 'YYYY-MM-DD'",
  timestamp: "str ISO-8601 with a zone, e.g. '2024-01-31T09:30:00Z'",
  decimal: "str, the exact decimal, e.g. '12.50' (compute with decimal.Decimal, never float)",
};
const FIELD_TYPE_LIST = Object.keys(PY_TYPES).join(', ');

/** sha-256 of the instruction and the columns the script is given: what a script was written for. */
export function fingerprint(instruction: string, columns: readonly SchemaField[]): string {
  const canonical = JSON.stringify({ instruction, columns: columns.map((c) => [c.name, c.type]) });
  return createHash('sha256').update(canonical, 'utf8').digest('hex');
}

/**
 * What runs in the sandbox: the stored script, followed by a driver that feeds it one batch per frame
 * of stdin and yields its answer (the harness's fetch() protocol). Appended, so the script's own line
 * numbers stay those of its tracebacks; frames below `scriptLines` are the driver's.
 *
 * A batch travels by column in a binary frame (see batchFrame): packed numbers and NUL-joined text
 * cost both sides far less than JSON; the driver decodes each column into the list JSON gave before
 * and builds the rows the script is given. A data-quality answer that passes every row is
 * `{"pass": true}`. A transformation's answer goes back by column (`{"columns", "dropped"}`) when it
 * is one dict or None per row, each dict holding every output column: a column whose values are the
 * very objects it was given is sent as null (unchanged, so not coerced again), a column of numbers
 * (int or float, or None) as `{"f8": <base64 of the doubles>, "nulls": [rows]}`, and `dropped` lists the
 * rows answered None. Any other answer goes back as `{"result": <what the entry point returned>}`,
 * for the runner to name what is wrong.
 */
export function runnableScript(kind: CodegenKind, script: string): { text: string; scriptLines: number } {
  const body = script.endsWith('\n') ? script : `${script}\n`;
  const answer =
    kind === 'transformation'
      ? '_tapyard_columns(_tapyard_out, _tapyard_batch)'
      : '_tapyard_verdicts(_tapyard_out, _tapyard_batch)';
  const driver = [
    '',
    '',
    '_tapyard_makers = {}',
    '',
    '',
    'def _tapyard_rows(batch):',
    '    names = tuple(batch["names"])',
    '    make = _tapyard_makers.get(names)',
    '    if make is None:',
    // A comprehension with a dict display of the batch's columns builds rows several times faster
    // than dict(zip(...)); compiled once per set of columns. The names are written as literals (repr
    // of a str always is one), so each row is one BUILD_CONST_KEY_MAP instead of a lookup per key.
    '        cells = "".join("_%d, " % i for i in range(len(names)))',
    '        keys = ", ".join("%r: _%d" % (name, i) for i, name in enumerate(names))',
    '        make = eval("lambda columns, rows: [{%s} for %s in zip(*columns)] if columns else [{} for _ in range(rows)]" % (keys, cells or "_"), {})',
    '        _tapyard_makers[names] = make',
    '    return make(batch["columns"], batch["rows"])',
    '',
    '',
    'def _tapyard_decode(frame):',
    '    from array import array',
    '    from json import loads',
    '    mv = memoryview(frame)',
    '    pos = 4 + int.from_bytes(mv[:4], "little")',
    '    batch = loads(bytes(mv[4:pos]))',
    '    rows = batch["rows"]',
    '    columns = []',
    '    for spec in batch["columns"]:',
    '        kind = spec[0]',
    '        if kind == "json":',
    '            columns.append(loads(bytes(mv[pos:pos + spec[1]])))',
    '            pos += spec[1]',
    '            continue',
    '        width = 0 if kind[0] == "s" else 1 if kind == "b1" else int(kind[1])',
    '        data = mv[pos:pos + width * rows]',
    '        pos += width * rows',
    '        nulls = array("i")',
    '        nulls.frombytes(mv[pos:pos + 4 * spec[1]])',
    '        pos += 4 * spec[1]',
    '        if kind == "b1":',
    '            col = list(map(bool, bytes(data)))',
    '        elif width:',
    '            values = array("i" if kind == "i4" else "q" if kind == "i8" else "d")',
    '            values.frombytes(data)',
    '            col = values.tolist()',
    '            if kind == "f8" and spec[2]:',
    // The values JSON writes as integers, which Python reads as ints.
    '                ints = array("i")',
    '                ints.frombytes(mv[pos:pos + 4 * spec[2]])',
    '                pos += 4 * spec[2]',
    '                for i in ints:',
    '                    col[i] = int(col[i])',
    '        else:',
    '            col = str(mv[pos:pos + spec[2]], "latin-1" if kind == "s1" else "utf-16-le", "surrogatepass").split("\\x00")',
    '            pos += spec[2]',
    '        for i in nulls:',
    '            col[i] = None',
    '        columns.append(col)',
    '    batch["columns"] = columns',
    '    return batch',
    '',
    '',
    'def _tapyard_verdicts(out, batch):',
    '    from itertools import repeat',
    '    from operator import is_',
    '    if type(out) is list and len(out) == batch["rows"] and all(map(is_, out, repeat(None))):',
    '        return {"pass": True}',
    '    return {"result": out}',
    '',
    '',
    'def _tapyard_doubles(col):',
    // Numbers reach the platform as JSON.parse makes them, doubles: packed, they skip both texts.
    '    from array import array',
    '    from binascii import b2a_base64',
    '    from math import isfinite',
    '    types = set(map(type, col))',
    '    if not types <= {int, float, type(None)} or types == {type(None)}:',
    '        return col',
    '    nulls = [i for i, v in enumerate(col) if v is None] if type(None) in types else []',
    '    try:',
    '        doubles = array("d", [0 if v is None else v for v in col] if nulls else col)',
    '    except OverflowError:',
    '        return col',
    // NaN and infinities stay JSON, whose encoder refuses them (as before); so does an overflowing sum.
    '    if not isfinite(sum(doubles)):',
    '        return col',
    '    return {"f8": b2a_base64(doubles, newline=False).decode("ascii"), "nulls": nulls}',
    '',
    '',
    'def _tapyard_columns(out, batch):',
    '    from operator import is_, itemgetter',
    '    if type(out) is not list or len(out) != batch["rows"]:',
    '        return {"result": out}',
    '    given = batch["columns"]',
    // `in` and the set of types run in C: a row-by-row generator was a third of the answer's cost.
    '    dropped = [i for i, r in enumerate(out) if r is None] if None in out else []',
    '    rows = [r for r in out if r is not None] if dropped else out',
    '    if rows and set(map(type, rows)) != {dict}:',
    '        return {"result": out}',
    '    if dropped:',
    '        given = [[v for v, r in zip(col, out) if r is not None] for col in given]',
    '    columns = []',
    '    for k, name in enumerate(batch["names"] + batch["outputs"]):',
    '        get = itemgetter(name)',
    '        try:',
    // An unchanged column (the usual case) is compared as it is read, never built as a list.
    '            if k < len(given) and all(map(is_, map(get, rows), given[k])):',
    '                columns.append(None)',
    '                continue',
    '            col = list(map(get, rows))',
    '        except KeyError:',
    '            return {"result": out}',
    '        columns.append(_tapyard_doubles(col) if col else col)',
    '    return {"columns": columns, "dropped": dropped}',
    '',
    '',
    'def fetch():',
    '    import sys as _tapyard_sys',
    '    _tapyard_read = _tapyard_sys.stdin.buffer.read',
    '    while True:',
    '        _tapyard_head = _tapyard_read(4)',
    '        if len(_tapyard_head) < 4:',
    '            return',
    '        _tapyard_batch = _tapyard_decode(_tapyard_read(int.from_bytes(_tapyard_head, "little")))',
    `        _tapyard_out = ${ENTRY_POINTS[kind]}(_tapyard_rows(_tapyard_batch))`,
    '        _tapyard_out = _tapyard_out if isinstance(_tapyard_out, list) else (list(_tapyard_out) if _tapyard_out is not None and not isinstance(_tapyard_out, (str, bytes, dict)) else _tapyard_out)',
    `        yield ${answer}`,
    '',
  ].join('\n');
  return { text: body + driver, scriptLines: body.split('\n').length - 1 };
}

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
 * What runs in the sandbox: the stored script, followed by a driver that feeds it one batch per line
 * of stdin and yields its answer (the harness's fetch() protocol). Appended, so the script's own line
 * numbers stay those of its tracebacks; frames below `scriptLines` are the driver's.
 *
 * A batch travels by column (`{"names", "rows", "outputs", "columns"}`, see batchLine): one JSON
 * array per column costs both sides far less than a dict per row; the driver builds the rows the
 * script is given. A transformation's answer goes back by column too (`{"columns", "dropped"}`)
 * when it is one dict or None per row, each dict holding every output column: a column whose values
 * are the very objects it was given is sent as null (unchanged, so not coerced again), and `dropped`
 * lists the rows answered None. Any other answer goes back as `{"result": <what the entry point
 * returned>}`, for the runner to name what is wrong.
 */
export function runnableScript(kind: CodegenKind, script: string): { text: string; scriptLines: number } {
  const body = script.endsWith('\n') ? script : `${script}\n`;
  const answer =
    kind === 'transformation' ? '_tapyard_columns(_tapyard_out, _tapyard_batch)' : '{"result": _tapyard_out}';
  const driver =
    `\n\n_tapyard_makers = {}\n` +
    `\n\ndef _tapyard_rows(batch):\n` +
    `    names = tuple(batch["names"])\n` +
    `    make = _tapyard_makers.get(names)\n` +
    `    if make is None:\n` +
    // A comprehension with a dict display of the batch's columns builds rows several times faster
    // than dict(zip(...)); compiled once per set of columns.
    `        cells = "".join("_%d, " % i for i in range(len(names)))\n` +
    `        keys = ", ".join("names[%d]: _%d" % (i, i) for i in range(len(names)))\n` +
    `        make = eval("lambda columns, rows: [{%s} for %s in zip(*columns)] if columns else [{} for _ in range(rows)]" % (keys, cells or "_"), {"names": names})\n` +
    `        _tapyard_makers[names] = make\n` +
    `    return make(batch["columns"], batch["rows"])\n` +
    `\n\ndef _tapyard_columns(out, batch):\n` +
    `    from operator import is_, itemgetter\n` +
    `    if type(out) is not list or len(out) != batch["rows"]:\n` +
    `        return {"result": out}\n` +
    `    given = batch["columns"]\n` +
    `    dropped = [i for i, r in enumerate(out) if r is None]\n` +
    `    rows = [r for r in out if r is not None] if dropped else out\n` +
    `    if not all(type(r) is dict for r in rows):\n` +
    `        return {"result": out}\n` +
    `    if dropped:\n` +
    `        given = [[v for v, r in zip(col, out) if r is not None] for col in given]\n` +
    `    names = batch["names"] + batch["outputs"]\n` +
    `    if not names:\n` +
    `        return {"columns": [], "dropped": dropped}\n` +
    `    try:\n` +
    `        cells = list(map(itemgetter(*names), rows)) if len(names) > 1 else [(r[names[0]],) for r in rows]\n` +
    `    except KeyError:\n` +
    `        return {"result": out}\n` +
    `    columns = list(zip(*cells)) if cells else [() for _ in names]\n` +
    `    for k in range(len(given)):\n` +
    `        if all(map(is_, columns[k], given[k])):\n` +
    `            columns[k] = None\n` +
    `    return {"columns": columns, "dropped": dropped}\n` +
    `\n\ndef fetch():\n` +
    `    import sys as _tapyard_sys, json as _tapyard_json\n` +
    `    for _tapyard_line in _tapyard_sys.stdin:\n` +
    `        _tapyard_batch = _tapyard_json.loads(_tapyard_line)\n` +
    `        _tapyard_out = ${ENTRY_POINTS[kind]}(_tapyard_rows(_tapyard_batch))\n` +
    `        _tapyard_out = _tapyard_out if isinstance(_tapyard_out, list) else (list(_tapyard_out) if _tapyard_out is not None and not isinstance(_tapyard_out, (str, bytes, dict)) else _tapyard_out)\n` +
    `        yield ${answer}\n`;
  return { text: body + driver, scriptLines: body.split('\n').length - 1 };
}

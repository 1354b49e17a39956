import { DomainCode, ValidationError, quoteIdent } from '@tapyard/core';
import { QueryErrorCode } from './query-errors';

/** A table the statement reads: schema as written (null: unqualified), name. */
export interface RelationRef {
  schema: string | null;
  name: string;
}

/** A checked statement: the tables it reads and where each unqualified one is written (a byte offset). */
interface CheckedSql {
  relations: RelationRef[];
  /** Byte offsets of the unqualified table names that are not CTE names, for {@link qualifyRelations}. */
  unqualifiedAt: number[];
}

/**
 * Types whose input and output functions look objects up in the catalogs (`16384::regclass` names any
 * table of the database, `'t_other.orders'::regclass` says whether it exists), whatever the role may read.
 */
const CATALOG_TYPES = new Set([
  'regclass',
  'regcollation',
  'regconfig',
  'regdictionary',
  'regnamespace',
  'regoper',
  'regoperator',
  'regproc',
  'regprocedure',
  'regrole',
  'regtype',
]);

/** Why a statement may not run, in one sentence for the caller (400). */
export class UnsafeSqlError extends ValidationError {
  override domainCode: DomainCode = QueryErrorCode.UnsafeSql;
  constructor(reason: string) {
    super(`the SQL was refused: ${reason}`, [{ field: 'sql', problem: reason }]);
  }
}

/**
 * Functions a generated query may call: pure ones only (no file, network, sleep, settings, large
 * objects or catalog-reading helpers). Matched by name; a schema other than pg_catalog is refused.
 */
const ALLOWED_FUNCTIONS = new Set(
  `
  count sum avg min max string_agg array_agg bool_and bool_or every stddev stddev_pop stddev_samp variance var_pop
  var_samp percentile_cont percentile_disc mode json_agg jsonb_agg json_object_agg jsonb_object_agg corr covar_pop
  covar_samp regr_slope regr_intercept
  abs ceil ceiling floor round trunc sqrt cbrt power pow exp ln log log10 mod sign div width_bucket random_normal pi
  degrees radians
  lower upper length char_length character_length octet_length substring substr trim btrim ltrim rtrim replace
  concat concat_ws left right split_part position strpos initcap lpad rpad repeat reverse translate starts_with
  regexp_replace regexp_match regexp_matches regexp_like regexp_count regexp_substr regexp_split_to_array
  regexp_split_to_table to_char to_number format md5 encode decode ascii chr quote_ident quote_literal string_to_array
  array_to_string array_length cardinality array_position array_positions unnest array_append array_cat
  now current_date current_timestamp localtimestamp date_trunc date_part extract age to_date to_timestamp
  make_date make_time make_timestamp make_timestamptz make_interval date_bin justify_days justify_hours
  justify_interval timezone isfinite clock_timestamp statement_timestamp transaction_timestamp
  json_build_object jsonb_build_object json_build_array jsonb_build_array json_extract_path json_extract_path_text
  jsonb_extract_path jsonb_extract_path_text json_array_length jsonb_array_length json_typeof jsonb_typeof to_json
  to_jsonb json_array_elements jsonb_array_elements json_array_elements_text jsonb_array_elements_text json_each
  jsonb_each json_each_text jsonb_each_text json_object_keys jsonb_object_keys jsonb_path_query jsonb_path_exists
  jsonb_pretty jsonb_strip_nulls row_to_json
  generate_series row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value
  num_nulls num_nonnulls gen_random_uuid
`
    .split(/\s+/)
    .filter((f) => f.length > 0),
);

/** Nodes that write, lock or leave the statement: refused wherever they appear. */
const WRITING = new Map<string, string>([
  ['InsertStmt', 'it inserts rows'],
  ['UpdateStmt', 'it updates rows'],
  ['DeleteStmt', 'it deletes rows'],
  ['MergeStmt', 'it merges rows'],
]);

type Node = Record<string, unknown>;

/**
 * Parses with PostgreSQL's own parser (libpg-query) and accepts exactly one read-only statement:
 * SELECT, WITH … SELECT or VALUES; no data-modifying CTEs, no SELECT … INTO, no FOR UPDATE/SHARE, no
 * function outside the allow-list. Returns the tables it reads (CTE names excluded).
 */
export async function checkReadOnlySql(sql: string): Promise<RelationRef[]> {
  return (await inspect(sql)).relations;
}

/**
 * Rewrites a checked statement so that every table it reads is named in `schema`: an unqualified name
 * is never resolved by the search path, so a table of the caller's called `pg_stats` or `pg_class` is
 * that table and never the catalog's. The result is parsed again and must name no other place.
 */
export async function qualifyRelations(sql: string, schema: string): Promise<string> {
  const { unqualifiedAt } = await inspect(sql);
  const bytes = Buffer.from(sql, 'utf8');
  const prefix = Buffer.from(`${quoteIdent(schema)}.`, 'utf8');
  const parts: Buffer[] = [];
  let from = 0;
  for (const at of [...unqualifiedAt].sort((a, b) => a - b)) {
    parts.push(bytes.subarray(from, at), prefix);
    from = at;
  }
  parts.push(bytes.subarray(from));
  const qualified = Buffer.concat(parts).toString('utf8');
  const again = await inspect(qualified);
  if (again.unqualifiedAt.length > 0 || again.relations.some((r) => r.schema !== schema)) {
    throw new UnsafeSqlError('its table names could not all be placed in the schema');
  }
  return qualified;
}

async function inspect(sql: string): Promise<CheckedSql> {
  let tree: { stmts?: { stmt: Node }[] };
  try {
    // Loaded on first use: the module instantiates PostgreSQL's parser (WebAssembly, ~10 MB resident and
    // a 128 MB memory reserved) as it loads, which a process that never checks a query should not carry.
    const { parse } = await import('libpg-query');
    tree = (await parse(sql)) as { stmts?: { stmt: Node }[] };
  } catch (err) {
    throw new UnsafeSqlError(`it does not parse as PostgreSQL (${(err as Error).message.slice(0, 200)})`);
  }
  const stmts = tree.stmts ?? [];
  if (stmts.length !== 1)
    throw new UnsafeSqlError(`it has ${stmts.length} statements; exactly one is allowed`);
  const [kind] = Object.keys(stmts[0].stmt);
  if (kind !== 'SelectStmt') {
    throw new UnsafeSqlError(
      `it is a ${kind.replace(/Stmt$/, '')} statement; only SELECT, WITH … SELECT and VALUES run`,
    );
  }
  const relations: (RelationRef & { at: number })[] = [];
  const ctes = new Set<string>();
  const problems: string[] = [];
  walk(stmts[0].stmt, (type, node) => {
    const writes = WRITING.get(type);
    if (writes) problems.push(writes);
    else if (type.endsWith('Stmt') && type !== 'SelectStmt')
      problems.push(`it contains a ${type.replace(/Stmt$/, '')} statement`);
    if (type === 'SelectStmt') {
      if (node.intoClause) problems.push('SELECT … INTO creates a table');
      if (Array.isArray(node.lockingClause) && node.lockingClause.length > 0) {
        problems.push('it has a locking clause (FOR UPDATE / FOR SHARE)');
      }
    }
    if (type === 'CommonTableExpr' && typeof node.ctename === 'string') {
      // A CTE name is left unqualified; outside the CTE's scope it would be looked up in pg_catalog,
      // where every relation's name starts with pg_.
      if (node.ctename.toLowerCase().startsWith('pg_'))
        problems.push(`its CTE name ${node.ctename} starts with pg_`);
      ctes.add(node.ctename);
    }
    const typeName = node.typeName as Node | undefined;
    if (typeName && Array.isArray(typeName.names)) {
      const parts = (typeName.names as Node[]).map((p) => String((p.String as Node | undefined)?.sval ?? ''));
      const last = parts[parts.length - 1]?.toLowerCase() ?? '';
      if (CATALOG_TYPES.has(last)) problems.push(`it uses type ${last}, which reads the catalogs`);
    }
    if (type === 'FuncCall') {
      const parts = ((node.funcname as Node[] | undefined) ?? []).map((p) =>
        String((p.String as Node | undefined)?.sval ?? ''),
      );
      const name = parts[parts.length - 1]?.toLowerCase() ?? '';
      const schema = parts.length > 1 ? parts[parts.length - 2].toLowerCase() : null;
      if ((schema !== null && schema !== 'pg_catalog') || !ALLOWED_FUNCTIONS.has(name)) {
        problems.push(`it calls ${parts.join('.')}(), which is not an allowed function`);
      }
    }
    if (type === 'RangeVar') {
      if (node.catalogname) problems.push('it names another database');
      relations.push({
        schema: typeof node.schemaname === 'string' ? node.schemaname : null,
        name: String(node.relname),
        at: typeof node.location === 'number' ? node.location : -1,
      });
    }
  });
  if (problems.length > 0) throw new UnsafeSqlError([...new Set(problems)].join('; '));
  const tables = relations.filter((r) => r.schema !== null || !ctes.has(r.name));
  const unqualifiedAt = tables.filter((r) => r.schema === null).map((r) => r.at);
  if (unqualifiedAt.some((at) => at < 0)) throw new UnsafeSqlError('a table name has no position to qualify');
  return { relations: tables.map(({ schema, name }) => ({ schema, name })), unqualifiedAt };
}

/** Depth-first over the parse tree, calling `visit(type, node)` for every typed node. */
function walk(root: unknown, visit: (type: string, node: Node) => void): void {
  const stack: unknown[] = [root];
  let steps = 0;
  while (stack.length > 0) {
    // A statement the parser accepted is finite; the bound keeps a pathological one from holding the thread.
    if (++steps > 1_000_000) throw new UnsafeSqlError('it is too large to check');
    const v = stack.pop();
    if (Array.isArray(v)) {
      for (const x of v) stack.push(x);
    } else if (v && typeof v === 'object') {
      for (const [k, child] of Object.entries(v as Node)) {
        if (/^[A-Z]/.test(k) && child && typeof child === 'object' && !Array.isArray(child))
          visit(k, child as Node);
        stack.push(child);
      }
    }
  }
}

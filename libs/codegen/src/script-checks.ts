import { FIELD_TYPES, FieldType, SchemaField } from '@tapyard/model';
import { scriptFactsOf } from '@tapyard/sandbox';
import { ALLOWED_IMPORTS, CodegenKind, ENTRY_POINTS } from '@tapyard/scripts';

export interface CheckedScript {
  problems: string[];
  /** Transformation scripts: the columns OUTPUT_COLUMNS declares (empty for data-quality scripts). */
  outputColumns: SchemaField[];
}

const MAX_SCRIPT_CHARS = 200_000;

/**
 * The static checks a script passes before it may go live (the dry run comes after): it parses, defines
 * the contract's function taking the batch, imports only the allowed modules, calls nothing that reaches
 * outside its values, and (transformations) declares its added columns with known types and new names.
 */
export async function checkScript(
  python: string,
  kind: CodegenKind,
  script: string,
  columns: readonly SchemaField[],
): Promise<CheckedScript> {
  if (script.length > MAX_SCRIPT_CHARS) {
    return { problems: [`the script is longer than ${MAX_SCRIPT_CHARS} characters`], outputColumns: [] };
  }
  const r = await scriptFactsOf(python, script);
  if ('problem' in r) return { problems: [r.problem], outputColumns: [] };
  const f = r.facts;
  if (f.syntaxError)
    return { problems: [`it does not parse as Python 3: ${f.syntaxError}`], outputColumns: [] };
  const problems: string[] = [];
  const entry = ENTRY_POINTS[kind];
  const fn = f.functions[entry];
  if (!fn) problems.push(`it does not define ${entry}(rows) at module level`);
  else if (fn.async) problems.push(`${entry}() must be a plain function, not async`);
  else if (fn.args.length - fn.defaults > 1 || (fn.args.length < 1 && !fn.vararg))
    problems.push(`${entry}() must take exactly one argument, the batch of rows`);
  const allowed = new Set(ALLOWED_IMPORTS);
  const outside = f.modules.filter((m) => !allowed.has(m.split('.')[0]));
  if (outside.length > 0)
    problems.push(
      `it imports modules outside the allowed standard library: ${outside.slice(0, 10).join(', ')}`,
    );
  if (f.relativeImports) problems.push('it uses relative imports');
  if (f.risky.length > 0)
    problems.push(`it calls ${f.risky.slice(0, 5).join(', ')}, which scripts may not use`);
  if (f.dunder.length > 0)
    problems.push(
      `it reads dunder attributes (${f.dunder.slice(0, 5).join(', ')}), which scripts may not use`,
    );
  let outputColumns: SchemaField[] = [];
  if (kind === 'transformation') {
    if (f.outputProblem) problems.push(f.outputProblem);
    else if (f.outputColumns === null)
      problems.push('it does not declare OUTPUT_COLUMNS (use {} when no column is added)');
    else {
      const known = new Set(columns.map((c) => c.name));
      for (const [name, type] of f.outputColumns) {
        if (!(FIELD_TYPES as readonly string[]).includes(type))
          problems.push(
            `OUTPUT_COLUMNS gives '${name}' the unknown type '${type}' (one of ${FIELD_TYPES.join(', ')})`,
          );
        else if (known.has(name)) problems.push(`OUTPUT_COLUMNS adds '${name}', which is already a column`);
        else if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(name))
          problems.push(`OUTPUT_COLUMNS adds '${name}': a column name is letters, digits and _ (at most 63)`);
      }
      if (problems.length === 0)
        outputColumns = f.outputColumns.map(([name, type]) => ({ name, type: type as FieldType }));
    }
  } else if (f.outputColumns !== null && f.outputColumns.length > 0) {
    problems.push('a data-quality script does not add columns: remove OUTPUT_COLUMNS');
  }
  return { problems, outputColumns };
}

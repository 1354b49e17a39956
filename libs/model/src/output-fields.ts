/** The output schema of a pipeline; apart so the stage thread loads it without the DTOs. */
import { ValidationError } from './errors';
import { PipelineErrorCode } from './pipeline-errors';
import { columnsOf, parseExpression } from './expression';
import { SchemaField, TransformationStep } from './pipeline.types';

/** The columns a pipeline writes: its schema after the transformation steps. */
export function outputFields(fields: SchemaField[], steps: TransformationStep[]): SchemaField[] {
  let cols = fields.map((f) => ({ ...f }));
  steps.forEach((s, i) => {
    const where = `transformation.mappings[${i}]`;
    const has = (name: string) => cols.some((c) => c.name === name);
    const fail = (problem: string): never => {
      throw new ValidationError(`${where} ${problem}`, [{ field: where, problem }]).coded(
        PipelineErrorCode.Invalid,
      );
    };
    switch (s.op) {
      case 'rename':
        if (!has(s.from)) fail(`renames '${s.from}', which does not exist at that step`);
        if (has(s.to)) fail(`renames to '${s.to}', which already exists`);
        cols = cols.map((c) => (c.name === s.from ? { ...c, name: s.to } : c));
        break;
      case 'cast':
        if (!has(s.column)) fail(`casts '${s.column}', which does not exist at that step`);
        // A decimal's precision and scale belong to the old type: a cast drops them.
        cols = cols.map((c) => (c.name === s.column ? { name: c.name, type: s.type } : c));
        break;
      case 'drop':
        if (!has(s.column)) fail(`drops '${s.column}', which does not exist at that step`);
        cols = cols.filter((c) => c.name !== s.column);
        break;
      case 'derive': {
        const expr = parseExpression(s.expression);
        for (const ref of columnsOf(expr))
          if (!has(ref)) fail(`derive reads '${ref}', which does not exist at that step`);
        cols = has(s.column)
          ? cols.map((c) => (c.name === s.column ? { name: s.column, type: s.type } : c))
          : [...cols, { name: s.column, type: s.type }];
        break;
      }
    }
  });
  return cols;
}

import { buildSample, profileColumn } from './column';
import { fitsType, inferColumnType } from './infer';
import { DataProfile, ProfileOptions } from './profile.types';
import { findIssues, ProfiledColumn } from './quality';
import { recommend } from './recommendations';
import { suggestRules } from './rules';
import { columnCells, columnCount, columnNames } from './table';

const DEFAULT_TOP_K = 5;

/**
 * Profiles a parsed sample: per-column statistics, quality issues, advice and candidate rules.
 * `header` may be empty when the source has none (columns are then `column_<n>` and no header
 * issues are raised). Deterministic: the same input always yields a deep-equal result.
 */
export function profileColumns(header: string[], rows: string[][], opts: ProfileOptions = {}): DataProfile {
  const topK = Math.max(0, Math.floor(opts.topK ?? DEFAULT_TOP_K));
  const width = columnCount(header, rows);
  const names = columnNames(header, width);
  const columns: ProfiledColumn[] = names.map((name, index) => {
    const cells = columnCells(rows, index);
    const inferred = inferColumnType(cells);
    const sample = buildSample(index, name, header[index] ?? '', cells, inferred.type, (v) =>
      fitsType(v, inferred.type),
    );
    const profile = profileColumn(sample, rows.length, topK);
    if (inferred.precision !== undefined) profile.precision = inferred.precision;
    if (inferred.scale !== undefined) profile.scale = inferred.scale;
    if (inferred.note !== null) profile.typeNote = inferred.note;
    return { sample, profile };
  });
  const issues = findIssues({ header, rows, columns });
  return {
    rowCount: rows.length,
    columnCount: width,
    columns: columns.map(({ profile }) => profile),
    issues,
    recommendations: recommend(issues, columns),
    suggestedRules: suggestRules(columns, rows.length, opts.wholeFile ?? false),
  };
}

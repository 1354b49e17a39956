import { type ReactNode, useMemo } from 'react';
import { lineDiff } from '../logic/line-diff';

/**
 * Two script versions line by line: removed lines marked `-`, added `+`, with their line numbers. A
 * minimal view of its own for the CodeGen page (the console's shared DiffView is another helper's).
 */
export function VersionDiff({
  before,
  after,
  label,
}: {
  before: string;
  after: string;
  label: string;
}): ReactNode {
  const lines = useMemo(() => lineDiff(before, after), [before, after]);
  const changed = lines.filter((l) => l.kind !== 'same').length;
  return (
    <div className="version-diff">
      <p>{changed === 0 ? 'The two versions are the same text.' : `${changed} line(s) differ.`}</p>
      <div className="table-wrap">
        <table aria-label={label} className="diff">
          <thead>
            <tr>
              <th scope="col">Before</th>
              <th scope="col">After</th>
              <th scope="col">
                <span className="visually-hidden">Change</span>
              </th>
              <th scope="col">Line</th>
            </tr>
          </thead>
          <tbody>
            {lines.map((l, i) => (
              <tr key={i} className={`diff-${l.kind}`}>
                <td className="num">{l.before ?? ''}</td>
                <td className="num">{l.after ?? ''}</td>
                <td aria-label={l.kind === 'same' ? 'unchanged' : l.kind}>
                  {l.kind === 'added' ? '+' : l.kind === 'removed' ? '-' : ' '}
                </td>
                <td>
                  <code>{l.text}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}

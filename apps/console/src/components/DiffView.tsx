import './DiffView.css';
import { diffLines } from 'diff';
import { type ReactNode, useMemo } from 'react';

/** One line of a unified diff: kept, removed from `before` or added in `after`, with both line numbers. */
interface Line {
  kind: 'same' | 'removed' | 'added';
  text: string;
  before: number | null;
  after: number | null;
}

function linesOf(before: string, after: string): Line[] {
  const out: Line[] = [];
  let a = 1;
  let b = 1;
  for (const part of diffLines(before, after)) {
    const texts = part.value.replace(/\n$/, '').split('\n');
    for (const text of texts) {
      if (part.added) out.push({ kind: 'added', text, before: null, after: b++ });
      else if (part.removed) out.push({ kind: 'removed', text, before: a++, after: null });
      else out.push({ kind: 'same', text, before: a++, after: b++ });
    }
  }
  return out;
}

const SIGN = { same: ' ', removed: '−', added: '+' } as const;

/**
 * A line diff of two scripts (the `diff` package), shown before a rewrite is saved: removed lines marked
 * `−`, added ones `+`, each with its line number in the old and the new version. Marks are text, not only
 * colour, so a screen reader and a colour-blind reader see them too.
 */
export function DiffView({
  before,
  after,
  label,
}: {
  before: string;
  after: string;
  label: string;
}): ReactNode {
  const lines = useMemo(() => linesOf(before, after), [before, after]);
  const added = lines.filter((l) => l.kind === 'added').length;
  const removed = lines.filter((l) => l.kind === 'removed').length;
  return (
    <figure className="diff" aria-label={label}>
      <figcaption>
        {label}: <span className="diff-added">+{added}</span> <span className="diff-removed">−{removed}</span>
      </figcaption>
      <div className="table-wrap">
        <table className="diff-lines">
          <tbody>
            {lines.map((l, i) => (
              <tr key={i} className={`diff-${l.kind}`} data-kind={l.kind}>
                <td className="ln">{l.before ?? ''}</td>
                <td className="ln">{l.after ?? ''}</td>
                <td className="sign">{SIGN[l.kind]}</td>
                <td className="code">
                  <pre>{l.text}</pre>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </figure>
  );
}

import type { ReactNode } from 'react';
import { toneOf } from './logic/rollup-view';

/** An API error as the person reads it: a 403 says it was refused and why, nothing crashes. */
export function Problem({ text }: { text: string | null }): ReactNode {
  if (!text) return null;
  return (
    <p className="problem" role="alert">
      {text}
    </p>
  );
}

/** A control the caller's capabilities refuse: shown disabled, with the reason beside it. */
export function Refused({ reason }: { reason: string | null }): ReactNode {
  if (!reason) return null;
  return <p className="refused">{reason}</p>;
}

export function StatusBadge({ status }: { status: string }): ReactNode {
  return <span className={`badge tone-${toneOf(status)}`}>{status}</span>;
}

/**
 * A list shown as a table. A `null` column is the actions column: its header is read by screen readers
 * only, so the buttons in it still have a column name.
 */
export function DataTable({
  label,
  columns,
  children,
}: {
  label: string;
  columns: readonly (string | null)[];
  children: ReactNode;
}): ReactNode {
  return (
    <div className="table-wrap">
      <table aria-label={label}>
        <thead>
          <tr>
            {columns.map((c, i) => (
              <th scope="col" key={`${i}:${c ?? ''}`}>
                {c ?? <span className="visually-hidden">Actions</span>}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

/**
 * A destructive action in two presses: the first asks (and is disabled, with the reason as its title, when
 * the caller's capabilities refuse it), the second, in red, does it.
 */
export function ConfirmedAction({
  verb,
  doing,
  subject,
  asking,
  refused,
  ask,
  confirm,
}: {
  /** "Delete", "Revoke": the button's text. */
  verb: string;
  /** "deleting", "revoking": the confirming button's label. */
  doing: string;
  subject: string;
  asking: boolean;
  refused: string | null;
  ask: () => void;
  confirm: () => void;
}): ReactNode {
  if (asking)
    return (
      <button type="button" className="danger" onClick={confirm} aria-label={`Confirm ${doing} ${subject}`}>
        Confirm {verb.toLowerCase()}
      </button>
    );
  return (
    <button
      type="button"
      onClick={ask}
      disabled={refused !== null}
      title={refused ?? undefined}
      aria-label={`${verb} ${subject}`}
    >
      {verb}
    </button>
  );
}

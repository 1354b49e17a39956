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

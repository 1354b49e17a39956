import { type ReactNode, useEffect, useState } from 'react';
import { api, problemOf } from '../api/client';
import { Problem, Refused, StatusBadge } from '../components';
import { failingTaps } from '../logic/taps';
import { useRefusal } from '../session';
import { loadRows, openTap } from './Taps';

/** Shown on the Overview: at most this many, the most recently failed first. */
const SHOWN = 5;

/** The Overview's "failing taps": taps whose latest run ended in an error, with that error. */
export function FailingTaps(): ReactNode {
  const refused = useRefusal('tap:read');
  const [failing, setFailing] = useState<ReturnType<typeof failingTaps> | null>(null);
  const [problem, setProblem] = useState<string | null>(null);

  useEffect(() => {
    if (refused) return;
    void (async () => {
      const { data, error, response } = await api.GET('/api/v1/taps');
      if (!data) return setProblem(problemOf(error, response));
      const rows = await loadRows(data, false);
      setFailing(failingTaps(rows.map((r) => ({ name: r.tap.name, runs: r.runs }))));
    })();
  }, [refused]);

  return (
    <section aria-labelledby="failing-taps-title">
      <h2 id="failing-taps-title">Failing taps</h2>
      <Refused reason={refused} />
      <Problem text={problem} />
      {failing && failing.length === 0 && <p>No tap's latest run failed.</p>}
      {failing && failing.length > 0 && (
        <ul className="failing-taps" aria-label="Failing taps">
          {failing.slice(0, SHOWN).map(({ name, run }) => (
            <li key={name}>
              <a
                href={`/taps?tap=${encodeURIComponent(name)}`}
                onClick={(e) => {
                  e.preventDefault();
                  openTap(name);
                }}
              >
                {name}
              </a>{' '}
              <StatusBadge status={run.status} /> <small>{new Date(run.startedAt).toLocaleString()}</small>
              {run.error && <small className="error-text block">{run.error}</small>}
            </li>
          ))}
          {failing.length > SHOWN && <li>and {failing.length - SHOWN} more on the Taps page.</li>}
        </ul>
      )}
    </section>
  );
}

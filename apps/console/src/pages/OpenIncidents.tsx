import { type ReactNode, useEffect, useState } from 'react';
import { api, problemOf, type Schemas } from '../api/client';
import { Problem, StatusBadge } from '../components';
import { navigate } from '../router';
import { useRefusal } from '../session';

/** Incidents listed on the Overview: the newest of those still open. */
const SHOWN = 5;

/**
 * The Overview's open incidents. The list route gives no status, so each of the newest is read until
 * SHOWN open ones are found (or the list ends): a handful of reads, newest first.
 */
export function OpenIncidents(): ReactNode {
  const refused = useRefusal('pipeline:read');
  const [open, setOpen] = useState<Schemas['IncidentDto'][] | null>(null);
  const [problem, setProblem] = useState<string | null>(null);

  useEffect(() => {
    if (refused) return;
    void (async () => {
      const list = await api.GET('/api/v1/incidents');
      if (!list.data) return setProblem(problemOf(list.error, list.response));
      const found: Schemas['IncidentDto'][] = [];
      for (const item of list.data) {
        if (found.length >= SHOWN) break;
        const { data } = await api.GET('/api/v1/incidents/{id}', { params: { path: { id: item.id } } });
        if (data?.status === 'open') found.push(data);
      }
      setOpen(found);
    })();
  }, [refused]);

  if (refused) return null;
  return (
    <section aria-labelledby="open-incidents-title">
      <h2 id="open-incidents-title">Open incidents</h2>
      <Problem text={problem} />
      {open && open.length === 0 && <p>No open incident.</p>}
      {open && open.length > 0 && (
        <ul>
          {open.map((i) => (
            <li key={i.id}>
              <StatusBadge status={i.verdict} /> {i.subject} <strong>{i.subjectName}</strong>: {i.summary}{' '}
              <a
                href="/incidents"
                onClick={(e) => {
                  e.preventDefault();
                  navigate('/incidents');
                }}
              >
                see the evidence
              </a>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

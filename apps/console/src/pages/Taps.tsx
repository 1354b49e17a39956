import { type ReactNode, useEffect, useState } from 'react';
import { api, problemOf, type Schemas } from '../api/client';
import { DataTable, Problem, Refused, StatusBadge } from '../components';
import { lastRun, scheduleNote } from '../logic/taps';
import { navigate, useQuery } from '../router';
import { useRefusal } from '../session';
import { TapEditor } from './TapEditor';
import './taps.css';

type Tap = Schemas['TapDto'];
type Run = Schemas['RunLogEntryDto'];

interface Row {
  tap: Tap;
  runs: Run[];
  nextFire: string | undefined;
}

/** `/taps` lists the taps; `/taps?tap=<name>` opens one in the editor, `/taps?new=1` a new one. */
export function Taps(): ReactNode {
  const open = useQuery('tap');
  const creating = useQuery('new') !== null;
  if (open !== null || creating) return <TapEditor key={open ?? ''} name={open} />;
  return <TapList />;
}

export const openTap = (name: string | null): void =>
  navigate(name === null ? '/taps?new=1' : `/taps?tap=${encodeURIComponent(name)}`);

/** The runs of every listed tap (for its last status) and, for enabled schedules, the next fire time. */
export async function loadRows(taps: Tap[], fireTimes = true): Promise<Row[]> {
  return Promise.all(
    taps.map(async (tap) => {
      const runs = await api.GET('/api/v1/tap/runs', { params: { query: { name: tap.name } } });
      // GET /taps has no fire times: one GET /tap per scheduled tap gives the next five.
      const full =
        fireTimes && tap.cronExpression && tap.enabled
          ? await api.GET('/api/v1/tap', { params: { query: { name: tap.name } } })
          : null;
      return { tap, runs: runs.data ?? [], nextFire: full?.data?.nextFireTimes[0] };
    }),
  );
}

function TapList(): ReactNode {
  // Creating a tap is POST /tap, which needs tap:update.
  const refused = useRefusal('tap:update');
  const [rows, setRows] = useState<Row[] | null>(null);
  const [problem, setProblem] = useState<string | null>(null);

  useEffect(() => {
    void (async () => {
      const { data, error, response } = await api.GET('/api/v1/taps');
      if (!data) return setProblem(problemOf(error, response));
      setRows(await loadRows(data));
    })();
  }, []);

  return (
    <>
      <Problem text={problem} />
      <div className="actions">
        <button type="button" onClick={() => openTap(null)} disabled={refused !== null}>
          New tap
        </button>
      </div>
      <Refused reason={refused} />
      {rows && rows.length === 0 && <p>No taps yet.</p>}
      {rows && rows.length > 0 && (
        <DataTable
          label="Taps"
          columns={['Name', 'Target pipeline', 'Schedule', 'Next fire time', 'Last run', null]}
        >
          {rows.map(({ tap, runs, nextFire }) => {
            const last = lastRun(runs);
            return (
              <tr key={tap.name} data-tap={tap.name}>
                <td>
                  {tap.name}
                  {tap.description && <small className="block">{tap.description}</small>}
                </td>
                <td>{tap.targetPipeline || '–'}</td>
                <td>
                  {tap.cronExpression ? (
                    <code>
                      {tap.cronExpression} ({tap.timezone})
                    </code>
                  ) : (
                    '–'
                  )}
                </td>
                <td data-testid="next-fire">
                  {scheduleNote(tap) ?? (nextFire ? new Date(nextFire).toLocaleString() : '–')}
                </td>
                <td data-testid="last-status">
                  {last ? (
                    <>
                      <StatusBadge status={last.status} />{' '}
                      <small>{new Date(last.startedAt).toLocaleString()}</small>
                    </>
                  ) : (
                    'never run'
                  )}
                </td>
                <td>
                  <button type="button" onClick={() => openTap(tap.name)} aria-label={`Open ${tap.name}`}>
                    Open
                  </button>
                </td>
              </tr>
            );
          })}
        </DataTable>
      )}
    </>
  );
}

import { type ReactNode, useEffect, useState } from 'react';
import { api, problemOf, type Schemas } from '../api/client';
import { Problem, Refused, StatusBadge } from '../components';
import type { Rollup, RollupJob } from '../logic/rollup-view';
import { useRefusal } from '../session';
import { FailingTaps } from './TapsFailing';

type Services = Record<string, Schemas['ServiceStatusDto']>;

/** Jobs shown: the newest of the first pipelines listed, each with its rollup status. */
const RECENT_JOBS = 8;
const PIPELINES_SCANNED = 20;

export function Overview(): ReactNode {
  return (
    <>
      <Health />
      <RecentJobs />
      <FailingTaps />
    </>
  );
}

function Health(): ReactNode {
  const refused = useRefusal('platform:read');
  const [services, setServices] = useState<Services | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    if (refused) return;
    void api.GET('/api/v1/health/services').then(({ data, error, response }) => {
      if (data) setServices(data as Services);
      else setProblem(problemOf(error, response));
    });
  }, [refused]);
  return (
    <section aria-labelledby="health-title">
      <h2 id="health-title">Services</h2>
      <Refused reason={refused} />
      <Problem text={problem} />
      {services === null && !refused && !problem && <p>Probing the services…</p>}
      {services && (
        <ul className="services">
          {Object.entries(services).map(([name, s]) => (
            <li key={name} className={`service status-${s.status}`}>
              <strong>{name}</strong> <span>{s.status.replace('_', ' ')}</span>
              {s.message && <small>{s.message}</small>}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function RecentJobs(): ReactNode {
  const refused = useRefusal('job:read');
  const [jobs, setJobs] = useState<RollupJob[] | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    if (refused) return;
    void (async () => {
      const list = await api.GET('/api/v1/pipelines');
      if (!list.data) return setProblem(problemOf(list.error, list.response));
      const summaries = await Promise.all(
        list.data.slice(0, PIPELINES_SCANNED).map(async (p) => {
          const { data } = await api.GET('/api/v1/pipeline/status', {
            params: { query: { pipelinename: p.name } },
          });
          return (data ?? []) as { pipelineToken: string; createdAt: number }[];
        }),
      );
      const newest = summaries
        .flat()
        .sort((a, b) => b.createdAt - a.createdAt)
        .slice(0, RECENT_JOBS);
      const rollups = await Promise.all(
        newest.map(async (s) => {
          const { data } = await api.GET('/api/v1/pipeline/status', {
            params: { query: { pipelinetoken: s.pipelineToken, withrollup: true } },
          });
          return (data as { rollup: Rollup } | undefined)?.rollup.jobs[0];
        }),
      );
      setJobs(rollups.filter((j): j is RollupJob => j !== undefined));
    })();
  }, [refused]);
  return (
    <section aria-labelledby="jobs-title">
      <h2 id="jobs-title">Recent jobs</h2>
      <Refused reason={refused} />
      <Problem text={problem} />
      {jobs && jobs.length === 0 && <p>No jobs yet: upload a file on the Pipelines page.</p>}
      {jobs && jobs.length > 0 && (
        <div className="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Pipeline</th>
                <th scope="col">File</th>
                <th scope="col">Status</th>
                <th scope="col">Rows loaded</th>
                <th scope="col">Rejected</th>
                <th scope="col">Started</th>
                <th scope="col">Took</th>
              </tr>
            </thead>
            <tbody>
              {jobs.map((j) => (
                <tr key={j.pipelineToken}>
                  <td>{j.pipeline}</td>
                  <td>{j.filename}</td>
                  <td>
                    <StatusBadge status={j.status} />
                    {j.lastError && <small className="error-text"> {j.lastError.description}</small>}
                  </td>
                  <td>{j.rowsLoaded ?? '–'}</td>
                  <td>{j.rowsRejected ?? '–'}</td>
                  <td>{new Date(j.startedAt).toLocaleString()}</td>
                  <td>{j.elapsed}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

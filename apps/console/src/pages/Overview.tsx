import { type ReactNode, useEffect, useState } from 'react';
import { api, problemOf, type Schemas } from '../api/client';
import { DataTable, Problem, Refused, StatusBadge } from '../components';
import { useRefusal } from '../session';
import { OpenIncidents } from './OpenIncidents';
import { FailingTaps } from './TapsFailing';

type Services = Record<string, Schemas['ServiceStatusDto']>;

/** Jobs per page of `GET /pipeline/jobs`: a full page means there may be more. */
const RECENT_PAGE = 20;

export function Overview(): ReactNode {
  return (
    <>
      <Health />
      <RecentJobs />
      <OpenIncidents />
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
  const [page, setPage] = useState(1);
  const [jobs, setJobs] = useState<Schemas['RecentJobDto'][] | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    if (refused) return;
    void api
      .GET('/api/v1/pipeline/jobs', { params: { query: { page } } })
      .then(({ data, error, response }) => {
        if (data) setJobs(data);
        else setProblem(problemOf(error, response));
      });
  }, [refused, page]);
  return (
    <section aria-labelledby="jobs-title">
      <h2 id="jobs-title">Recent jobs</h2>
      <Refused reason={refused} />
      <Problem text={problem} />
      {jobs && jobs.length === 0 && page === 1 && <p>No jobs yet: upload a file on the Pipelines page.</p>}
      {jobs && jobs.length > 0 && (
        <DataTable
          label="Recent jobs"
          columns={['Pipeline', 'File', 'Status', 'Rows loaded', 'Rejected', 'Started', 'Took']}
        >
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
        </DataTable>
      )}
      {jobs && (page > 1 || jobs.length === RECENT_PAGE) && (
        <div className="actions">
          <button type="button" disabled={page === 1} onClick={() => setPage(page - 1)}>
            Newer jobs
          </button>
          <button type="button" disabled={jobs.length < RECENT_PAGE} onClick={() => setPage(page + 1)}>
            Older jobs
          </button>
        </div>
      )}
    </section>
  );
}

import { type ReactNode, useEffect, useState } from 'react';
import { api, problemOf, type Schemas } from '../api/client';
import { DataTable, Problem, Refused } from '../components';
import { cellText } from '../logic/pipeline-form';
import { useRefusal } from '../session';

/** A page of a job's rows read back, with Previous / Next (the API answers pageSize rows at most). */
function Pager({
  page,
  full,
  label,
  go,
}: {
  page: number;
  full: boolean;
  label: string;
  go: (page: number) => void;
}): ReactNode {
  if (page === 1 && !full) return null;
  return (
    <div className="actions">
      <button
        type="button"
        disabled={page === 1}
        onClick={() => go(page - 1)}
        aria-label={`Previous ${label}`}
      >
        Previous
      </button>
      <span>Page {page}</span>
      <button type="button" disabled={!full} onClick={() => go(page + 1)} aria-label={`Next ${label}`}>
        Next
      </button>
    </div>
  );
}

/**
 * Every row a job rejected, with its line and reason (`GET /pipeline/jobs/{token}/rejects`); `fallback`
 * (what the status tells) when the pipeline's destinations keep no rejects to read back.
 */
export function JobRejects({ token, fallback }: { token: string; fallback: ReactNode }): ReactNode {
  const [page, setPage] = useState(1);
  const [answer, setAnswer] = useState<Schemas['JobRejectsPageDto'] | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    void api
      .GET('/api/v1/pipeline/jobs/{pipelineToken}/rejects', {
        params: { path: { pipelineToken: token }, query: { page } },
      })
      .then(({ data, error, response }) => {
        if (data) setAnswer(data);
        else setProblem(problemOf(error, response));
      });
  }, [token, page]);
  return (
    <div>
      <Problem text={problem} />
      {answer && answer.location === null && fallback}
      {answer && answer.rejects.length > 0 && (
        <>
          <DataTable label="Rejected rows" columns={['Line', 'Reason', 'Stage']}>
            {answer.rejects.map((r) => (
              <tr key={`${r.line}:${r.reason}`}>
                <td>{r.line}</td>
                <td>{r.reason}</td>
                <td>{r.stage}</td>
              </tr>
            ))}
          </DataTable>
          <small>Read from {answer.location}.</small>
          <Pager page={page} full={answer.rejects.length === answer.pageSize} label="rejects" go={setPage} />
        </>
      )}
    </div>
  );
}

/**
 * The rows a job loaded, as a table (`GET /pipeline/jobs/{token}/rows`): rows are data, so it needs
 * search:query besides job:read, and says so when the caller lacks it.
 */
export function RowsPreview({ token }: { token: string }): ReactNode {
  const refused = useRefusal('search:query');
  const [page, setPage] = useState(1);
  const [answer, setAnswer] = useState<Schemas['JobRowsPageDto'] | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    if (refused) return;
    void api
      .GET('/api/v1/pipeline/jobs/{pipelineToken}/rows', {
        params: { path: { pipelineToken: token }, query: { page } },
      })
      .then(({ data, error, response }) => {
        if (data) setAnswer(data);
        else setProblem(problemOf(error, response));
      });
  }, [token, page, refused]);
  return (
    <section aria-labelledby="preview-title">
      <h3 id="preview-title">Loaded rows</h3>
      <Refused reason={refused} />
      <Problem text={problem} />
      {answer && answer.location === null && <p>This pipeline's destinations keep no rows to read back.</p>}
      {answer && answer.location !== null && answer.rows.length === 0 && <p>No rows of this job are left.</p>}
      {answer && answer.rows.length > 0 && (
        <>
          <DataTable label="Loaded rows" columns={answer.columns}>
            {answer.rows.map((row, i) => (
              <tr key={i}>
                {answer.columns.map((c) => (
                  <td key={c}>{cellText(row[c])}</td>
                ))}
              </tr>
            ))}
          </DataTable>
          <small>Read from {answer.location}.</small>
          <Pager page={page} full={answer.rows.length === answer.pageSize} label="rows" go={setPage} />
        </>
      )}
    </section>
  );
}

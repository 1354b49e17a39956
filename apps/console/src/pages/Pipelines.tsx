import { type FormEvent, type ReactNode, useEffect, useMemo, useState } from 'react';
import { api, clientWithUploadProgress, problemOf } from '../api/client';
import { Problem, Refused, StatusBadge } from '../components';
import { confirmsDeletion } from '../logic/pipeline-form';
import {
  type RejectView,
  type Rollup,
  type StatusEntry,
  rejectsOf,
  rejectsTable,
  rowsSoFar,
  stagesOf,
} from '../logic/rollup-view';
import { useRefusal } from '../session';
import { useLoaded } from '../useLoaded';
import { CreateFromSample, EditPipeline } from './PipelineEditor';
import { JobRejects, RowsPreview } from './PipelineRows';

/** How often a running job's status is read again. */
const POLL_MS = 1000;

/** The panel open under the list: one pipeline's upload, edit or delete, or a new pipeline. */
type Open = { kind: 'upload' | 'edit' | 'delete'; pipeline: string } | { kind: 'create' } | null;

export function Pipelines(): ReactNode {
  const list = useLoaded(() => api.GET('/api/v1/pipelines'));
  const pipelines = list.data;
  const [search, setSearch] = useState('');
  const [open, setOpen] = useState<Open>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const createRefused = useRefusal('pipeline:create');
  const deleteRefused = useRefusal('pipeline:delete');

  const shown = useMemo(() => {
    const q = search.trim().toLowerCase();
    return (pipelines ?? []).filter(
      (p) => q === '' || p.name.toLowerCase().includes(q) || (p.catalog ?? '').toLowerCase().includes(q),
    );
  }, [pipelines, search]);
  const selected = open && open.kind !== 'create' ? open.pipeline : null;

  return (
    <>
      <Problem text={list.problem} />
      {notice && (
        <p className="notice" role="status">
          {notice}
        </p>
      )}
      <div className="actions">
        <label className="search">
          Search pipelines
          <input
            type="search"
            value={search}
            onChange={(e) => setSearch(e.target.value)}
            placeholder="name or catalog"
          />
        </label>
      </div>
      <div className="actions">
        <button
          type="button"
          onClick={() => {
            setNotice(null);
            setOpen({ kind: 'create' });
          }}
          disabled={createRefused !== null}
          title={createRefused ?? undefined}
        >
          New pipeline from a sample
        </button>
      </div>
      {pipelines && (
        <div className="table-wrap">
          <table aria-label="Pipelines">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Catalog</th>
                <th scope="col">Source</th>
                <th scope="col">Destinations</th>
                <th scope="col">Version</th>
                <th scope="col">Updated</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {shown.map((p) => (
                <tr key={p.name} aria-selected={p.name === selected} data-pipeline={p.name}>
                  <td>{p.name}</td>
                  <td>{p.catalog ?? '–'}</td>
                  <td>{p.sourceType}</td>
                  <td>{p.destinations.join(', ')}</td>
                  <td>{p.version}</td>
                  <td>{new Date(p.updatedAt).toLocaleString()}</td>
                  <td>
                    <div className="actions">
                      <button
                        type="button"
                        onClick={() => setOpen({ kind: 'upload', pipeline: p.name })}
                        aria-label={`Load a file into ${p.name}`}
                      >
                        Load a file
                      </button>
                      <button
                        type="button"
                        onClick={() => setOpen({ kind: 'edit', pipeline: p.name })}
                        aria-label={`Edit ${p.name}`}
                      >
                        Edit
                      </button>
                      <button
                        type="button"
                        onClick={() => setOpen({ kind: 'delete', pipeline: p.name })}
                        disabled={deleteRefused !== null}
                        title={deleteRefused ?? undefined}
                        aria-label={`Delete ${p.name}`}
                      >
                        Delete
                      </button>
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {shown.length === 0 && <p>No pipeline matches.</p>}
        </div>
      )}
      {pipelines && (createRefused || deleteRefused) && <Refused reason={createRefused ?? deleteRefused} />}
      {open?.kind === 'create' && <CreateFromSample saved={() => void list.reload()} />}
      {open?.kind === 'upload' && <Upload key={open.pipeline} pipeline={open.pipeline} />}
      {open?.kind === 'edit' && (
        <EditPipeline key={open.pipeline} name={open.pipeline} saved={() => void list.reload()} />
      )}
      {open?.kind === 'delete' && (
        <DeletePipeline
          key={open.pipeline}
          pipeline={open.pipeline}
          deleted={(report) => {
            setOpen(null);
            setNotice(report);
            void list.reload();
          }}
        />
      )}
    </>
  );
}

/** Delete with its data, once the pipeline's exact name is typed. */
function DeletePipeline({
  pipeline,
  deleted,
}: {
  pipeline: string;
  deleted: (report: string) => void;
}): ReactNode {
  const [typed, setTyped] = useState('');
  const [withData, setWithData] = useState(true);
  const [problem, setProblem] = useState<string | null>(null);

  const submit = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    if (!confirmsDeletion(typed, pipeline)) return;
    setProblem(null);
    const { data, error, response } = await api.DELETE('/api/v1/pipeline', {
      params: { query: { pipeline, deleteData: withData } },
    });
    if (!data) return setProblem(problemOf(error, response));
    deleted(
      `Pipeline ${pipeline} deleted${data.dataDeleted ? ' with its data' : ''}.` +
        (data.skipped?.length ? ` Left in place: ${data.skipped.map((s) => s.object).join(', ')}.` : ''),
    );
  };

  return (
    <section aria-labelledby="delete-title" className="panel">
      <h2 id="delete-title">Delete {pipeline}</h2>
      <form onSubmit={submit}>
        <label className="inline-check">
          <input type="checkbox" checked={withData} onChange={(e) => setWithData(e.target.checked)} />
          Also delete the data it loaded (its table, rejects and job files)
        </label>
        <label>
          Type the pipeline's name ({pipeline}) to confirm
          <input value={typed} onChange={(e) => setTyped(e.target.value)} autoComplete="off" />
        </label>
        <button type="submit" className="danger" disabled={!confirmsDeletion(typed, pipeline)}>
          Delete pipeline
        </button>
      </form>
      <Problem text={problem} />
    </section>
  );
}

interface JobState {
  token: string;
  rollup: Rollup | null;
  events: StatusEntry[];
}

export function Upload({ pipeline }: { pipeline: string }): ReactNode {
  const refused = useRefusal('pipeline:upload');
  const [file, setFile] = useState<File | null>(null);
  const [sent, setSent] = useState<{ sent: number; total: number } | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [job, setJob] = useState<JobState | null>(null);

  const submit = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    if (!file) return;
    setProblem(null);
    setJob(null);
    setSent({ sent: 0, total: file.size });
    const client = clientWithUploadProgress((s, total) => setSent({ sent: s, total }));
    const { data, error, response } = await client
      .POST('/api/v1/pipeline/upload', {
        // The generated type says `string` for a binary part; multipart sends the File itself.
        body: { pipeline, file: file as unknown as string },
        bodySerializer: (body) => {
          const form = new FormData();
          form.append('pipeline', body.pipeline);
          form.append('file', file, file.name);
          return form;
        },
        parseAs: 'text',
      })
      .catch((err: unknown) => ({
        data: undefined,
        error: String(err),
        response: new Response(null, { status: 599 }),
      }));
    if (!response.ok || data === undefined) return setProblem(problemOf(error, response));
    setJob({ token: data.trim(), rollup: null, events: [] });
  };

  // Follows the job until the rollup says it is done (allDone), one poll at a time.
  useEffect(() => {
    if (!job || job.rollup?.allDone) return;
    let stopped = false;
    const timer = setTimeout(
      async () => {
        const { data, error, response } = await api.GET('/api/v1/pipeline/status', {
          params: { query: { pipelinetoken: job.token, withrollup: true } },
        });
        if (stopped) return;
        if (!data) return setProblem(problemOf(error, response));
        const answer = data as { rollup: Rollup; events: StatusEntry[] };
        setJob({ token: job.token, rollup: answer.rollup, events: answer.events });
      },
      job.rollup ? POLL_MS : 0,
    );
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [job]);

  const rollupJob = job?.rollup?.jobs[0];
  const progress = job ? rowsSoFar(job.events) : null;
  const rejects = rollupJob && job ? rejectsOf(rollupJob, job.events) : [];
  const kept = job ? rejectsTable(job.events) : null;

  return (
    <section aria-labelledby="upload-title" className="panel">
      <h2 id="upload-title">Load a file into {pipeline}</h2>
      <form onSubmit={submit}>
        <label>
          File
          <input
            type="file"
            onChange={(e) => setFile(e.target.files?.[0] ?? null)}
            disabled={refused !== null}
          />
        </label>
        <button type="submit" disabled={refused !== null || file === null}>
          Upload
        </button>
        <Refused reason={refused} />
      </form>
      {sent && (
        <div className="progress">
          <label htmlFor="upload-progress">Sent</label>
          <progress id="upload-progress" max={sent.total || 1} value={sent.sent} />
          <span data-testid="upload-bytes">
            {sent.sent} of {sent.total} bytes ({sent.total ? Math.floor((sent.sent / sent.total) * 100) : 0}%)
          </span>
        </div>
      )}
      <Problem text={problem} />
      {job && (
        <div aria-live="polite" className="job">
          <p>
            Job <code>{job.token}</code>: {job.rollup ? <StatusBadge status={job.rollup.status} /> : 'queued'}
            {job.rollup?.allDone ? ' (done)' : ''}
          </p>
          {progress && !job.rollup?.allDone && (
            <p>
              {progress.loaded} rows loaded so far, {progress.rejected} rejected
            </p>
          )}
          {rollupJob?.rowsLoaded !== null && rollupJob?.rowsLoaded !== undefined && (
            <p data-testid="rows">
              {rollupJob.rowsLoaded} rows loaded, {rollupJob.rowsRejected ?? 0} rejected
            </p>
          )}
          <ol className="stages" aria-label="Stages">
            {stagesOf(job.events).map((s) => (
              <li key={s.name} className={`stage state-${s.state}`}>
                <strong>{s.name}</strong> <span>{s.state}</span> <small>{s.description}</small>
              </li>
            ))}
          </ol>
          {rollupJob?.lastError && (
            <p className="problem" role="alert">
              {rollupJob.lastError.processName}: {rollupJob.lastError.description}
            </p>
          )}
          {job.rollup?.allDone && rollupJob && (rollupJob.rowsRejected ?? 0) > 0 && (
            <JobRejects token={job.token} fallback={<StatusRejects rejects={rejects} kept={kept} />} />
          )}
          {job.rollup?.allDone && rollupJob && (rollupJob.rowsRejected ?? 0) === 0 && (
            <StatusRejects rejects={rejects} kept={kept} />
          )}
          {job.rollup?.allDone && (rollupJob?.rowsLoaded ?? 0) > 0 && <RowsPreview token={job.token} />}
        </div>
      )}
    </section>
  );
}

/** Rejects as the status tells them, for a job whose destinations keep none to read back. */
function StatusRejects({ rejects, kept }: { rejects: RejectView[]; kept: string | null }): ReactNode {
  return (
    <>
      {rejects.length > 0 && (
        <table aria-label="Rejected rows">
          <thead>
            <tr>
              <th scope="col">Line</th>
              <th scope="col">Reason</th>
            </tr>
          </thead>
          <tbody>
            {rejects.map((r) => (
              <tr key={`${r.line}:${r.reason}`}>
                <td>{r.line}</td>
                <td>{r.reason}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {kept && (
        <p>
          Rejected rows, with their line numbers and reasons, are kept in <code>{kept}</code>.
        </p>
      )}
    </>
  );
}

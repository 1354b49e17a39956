import { type ReactNode, useCallback, useEffect, useState } from 'react';
import { api, problemOf, type Schemas } from '../api/client';
import { Chart } from '../components/Chart';
import { DiffView } from '../components/DiffView';
import { DataTable, Problem, Refused, StatusBadge } from '../components';
import {
  type Evidence,
  failedChecks,
  nullRateSeries,
  quantileSeries,
  topValueSeries,
} from '../logic/evidence-view';
import { useRefusal } from '../session';
import '../data.css';

type ListItem = Schemas['IncidentListItemDto'];
type Incident = Schemas['IncidentDto'];
type Version = Schemas['CodegenVersionDto'];
type Kind = 'dataQuality' | 'transformation';
const VERDICTS = ['pending', 'fail', 'needs-human', 'pass'] as const;
type Verdict = (typeof VERDICTS)[number];

/** How often evidence still being computed is read again. */
const POLL_MS = 1000;

/** CodeGen and incidents: each incident's evidence and verdict, and the pipelines' script versions. */
export function Incidents(): ReactNode {
  const [selected, setSelected] = useState<string | null>(null);
  const [reload, setReload] = useState(0);
  return (
    <>
      <IncidentList selected={selected} select={setSelected} reload={reload} />
      {selected && (
        <IncidentDetail key={`${selected}:${reload}`} id={selected} changed={() => setReload((n) => n + 1)} />
      )}
      <Scripts />
    </>
  );
}

function IncidentList({
  selected,
  select,
  reload,
}: {
  selected: string | null;
  select: (id: string) => void;
  reload: number;
}): ReactNode {
  const refused = useRefusal('pipeline:read');
  const [items, setItems] = useState<ListItem[] | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [verdict, setVerdict] = useState<Verdict | ''>('');

  useEffect(() => {
    if (refused) return;
    void api
      .GET('/api/v1/incidents', { params: { query: verdict ? { verdict } : {} } })
      .then(({ data, error, response }) => {
        if (data) setItems(data);
        else setProblem(problemOf(error, response));
      });
  }, [refused, verdict, reload]);

  return (
    <section aria-labelledby="incidents-title" className="panel">
      <h2 id="incidents-title">Incidents</h2>
      <Refused reason={refused} />
      <Problem text={problem} />
      <label>
        Verdict
        <select value={verdict} onChange={(e) => setVerdict(e.target.value as Verdict | '')}>
          <option value="">any</option>
          {VERDICTS.map((v) => (
            <option key={v}>{v}</option>
          ))}
        </select>
      </label>
      {items && items.length === 0 && <p>No incident: no script change has replaced an earlier version.</p>}
      {items && items.length > 0 && (
        <DataTable label="Incidents" columns={['Opened', 'Of', 'Verdict', 'Summary', null]}>
          {items.map((i) => (
            <tr key={i.id} aria-selected={i.id === selected}>
              <td>{new Date(i.openedAt).toLocaleString()}</td>
              <td>
                {i.subject} {i.subjectName}
              </td>
              <td>
                <StatusBadge status={i.verdict} />
              </td>
              <td>{i.summary}</td>
              <td>
                <button
                  type="button"
                  onClick={() => select(i.id)}
                  aria-label={`Open the incident of ${i.subjectName}: ${i.summary}`}
                >
                  Open
                </button>
              </td>
            </tr>
          ))}
        </DataTable>
      )}
    </section>
  );
}

function IncidentDetail({ id, changed }: { id: string; changed: () => void }): ReactNode {
  const refused = useRefusal('pipeline:update');
  const [incident, setIncident] = useState<Incident | null>(null);
  const [evidence, setEvidence] = useState<Evidence | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [resolution, setResolution] = useState('');
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    void api.GET('/api/v1/incidents/{id}', { params: { path: { id } } }).then(({ data, error, response }) => {
      if (data) setIncident(data);
      else setProblem(problemOf(error, response));
    });
  }, [id]);

  // Evidence is computed a second or so after the change: read again while it says pending.
  useEffect(() => {
    if (evidence && evidence.verdict !== 'pending') return;
    let stopped = false;
    const timer = setTimeout(
      async () => {
        const { data, error, response } = await api.GET('/api/v1/incidents/{id}/evidence', {
          params: { path: { id } },
        });
        if (stopped) return;
        if (data) setEvidence(data as unknown as Evidence);
        else setProblem(problemOf(error, response));
      },
      evidence ? POLL_MS : 0,
    );
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [id, evidence]);

  const act = async (action: 'verify' | 'resolve'): Promise<void> => {
    setBusy(true);
    setProblem(null);
    const { error, response } =
      action === 'verify'
        ? await api.POST('/api/v1/incidents/{id}/verify', { params: { path: { id } } })
        : await api.POST('/api/v1/incidents/{id}/resolve', {
            params: { path: { id } },
            body: resolution.trim() ? { resolution: resolution.trim() } : {},
          });
    setBusy(false);
    if (!response.ok) return setProblem(problemOf(error, response));
    changed();
  };

  const nulls = evidence ? nullRateSeries(evidence) : null;
  const quantiles = evidence ? quantileSeries(evidence) : [];
  const tops = evidence ? topValueSeries(evidence) : [];
  const failed = evidence ? failedChecks(evidence) : [];
  const open = incident?.status === 'open';

  return (
    <section aria-labelledby="incident-title" className="panel">
      <h2 id="incident-title">
        Incident of {incident?.subject} {incident?.subjectName}
      </h2>
      <Problem text={problem} />
      {incident && (
        <p>
          {incident.summary}. Status <strong data-testid="incident-status">{incident.status}</strong>
          {incident.resolvedAt && ` since ${new Date(incident.resolvedAt).toLocaleString()}`}
          {incident.resolution && `: ${incident.resolution}`}.
        </p>
      )}
      {evidence && (
        <>
          <p>
            Verdict <StatusBadge status={evidence.verdict} />
            {evidence.verdict === 'pending' && ' (the evidence is being computed)'}
            {failed.length > 0 && ` — failed: ${failed.map((c) => c.name).join(', ')}`}
          </p>
          {evidence.checks.length > 0 && (
            <DataTable label="Checks" columns={['Check', 'Passed', 'Observed', 'Limit']}>
              {evidence.checks.map((c) => (
                <tr key={c.name} className={c.passed ? '' : 'failed'}>
                  <td>{c.name}</td>
                  <td>{c.passed ? 'yes' : 'no'}</td>
                  <td>{c.observed}</td>
                  <td>{c.limit}</td>
                </tr>
              ))}
            </DataTable>
          )}
          {evidence.baseline && evidence.candidate && (
            <p>
              Rows out: baseline {evidence.baseline.recordCount}, candidate {evidence.candidate.recordCount};
              data-quality pass rate {pct(evidence.baseline.dqPassRate)} →{' '}
              {pct(evidence.candidate.dqPassRate)} ({evidence.baseline.source}).
            </p>
          )}
          <div className="charts">
            {nulls && <Chart series={nulls} format={pct} />}
            {quantiles.map((s) => (
              <Chart key={s.title} series={s} />
            ))}
            {tops.map((s) => (
              <Chart key={s.title} series={s} />
            ))}
          </div>
          {incident?.subject === 'pipeline' &&
            (incident.scriptVersions as { kind: Kind; before: number; after: number }[]).map((v) => (
              <details key={v.kind}>
                <summary>
                  {v.kind}: version {v.before} → {v.after}
                </summary>
                <CompareVersions
                  pipeline={incident.subjectName}
                  kind={v.kind}
                  before={v.before}
                  after={v.after}
                />
              </details>
            ))}
        </>
      )}
      {incident && open && (
        <div className="row">
          <Refused reason={refused} />
          <button type="button" onClick={() => void act('verify')} disabled={refused !== null || busy}>
            Verify
          </button>
          <label>
            Resolution
            <input
              value={resolution}
              onChange={(e) => setResolution(e.target.value)}
              disabled={refused !== null}
            />
          </label>
          <button type="button" onClick={() => void act('resolve')} disabled={refused !== null || busy}>
            Resolve
          </button>
        </div>
      )}
    </section>
  );
}

function pct(v: number): string {
  return `${Math.round(v * 1000) / 10}%`;
}

/** The text of two versions of a script, fetched, then their diff. */
function CompareVersions({
  pipeline,
  kind,
  before,
  after,
}: {
  pipeline: string;
  kind: Kind;
  before: number;
  after: number;
}): ReactNode {
  const [texts, setTexts] = useState<[string, string] | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    const read = (version: number) =>
      api.GET('/api/v1/pipelines/{name}/codegen-scripts/{kind}/versions/{version}', {
        params: { path: { name: pipeline, kind, version } },
      });
    void Promise.all([read(before), read(after)]).then(([a, b]) => {
      if (a.data && b.data) setTexts([a.data.script, b.data.script]);
      else setProblem(a.data ? problemOf(b.error, b.response) : problemOf(a.error, a.response));
    });
  }, [pipeline, kind, before, after]);
  if (problem) return <Problem text={problem} />;
  if (!texts) return <p>Reading the two versions…</p>;
  return <DiffView before={texts[0]} after={texts[1]} label={`${kind} version ${before} against ${after}`} />;
}

function Scripts(): ReactNode {
  const [pipelines, setPipelines] = useState<string[] | null>(null);
  const [pipeline, setPipeline] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    void api.GET('/api/v1/pipelines').then(({ data, error, response }) => {
      if (!data) return setProblem(problemOf(error, response));
      setPipelines(data.map((p) => p.name));
    });
  }, []);
  return (
    <section aria-labelledby="scripts-title" className="panel">
      <h2 id="scripts-title">CodeGen scripts</h2>
      <Problem text={problem} />
      {pipelines && (
        <label>
          Pipeline of the scripts
          <select value={pipeline} onChange={(e) => setPipeline(e.target.value)}>
            <option value="">choose one</option>
            {pipelines.map((p) => (
              <option key={p}>{p}</option>
            ))}
          </select>
        </label>
      )}
      {pipeline && <PipelineScripts key={pipeline} pipeline={pipeline} />}
    </section>
  );
}

function PipelineScripts({ pipeline }: { pipeline: string }): ReactNode {
  const [entries, setEntries] = useState<Schemas['CodegenEntriesDto'] | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [reload, setReload] = useState(0);
  useEffect(() => {
    void api
      .GET('/api/v1/pipelines/{name}/codegen-scripts', { params: { path: { name: pipeline } } })
      .then(({ data, error, response }) => {
        if (data) setEntries(data);
        else setProblem(problemOf(error, response));
      });
  }, [pipeline, reload]);
  const kinds = entries ? (['dataQuality', 'transformation'] as Kind[]).filter((k) => entries[k]) : [];
  return (
    <>
      <Problem text={problem} />
      {entries && kinds.length === 0 && <p>This pipeline has no AI instruction, so no CodeGen script.</p>}
      {entries &&
        kinds.map((k) => (
          <KindVersions
            key={`${k}:${reload}`}
            pipeline={pipeline}
            kind={k}
            entry={entries[k] as Schemas['CodegenEntryDto']}
            restored={() => setReload((n) => n + 1)}
          />
        ))}
    </>
  );
}

function KindVersions({
  pipeline,
  kind,
  entry,
  restored,
}: {
  pipeline: string;
  kind: Kind;
  entry: Schemas['CodegenEntryDto'];
  restored: () => void;
}): ReactNode {
  const refused = useRefusal('pipeline:update');
  const [versions, setVersions] = useState<Version[] | null>(null);
  const [compare, setCompare] = useState<[number, number] | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);

  useEffect(() => {
    void api
      .GET('/api/v1/pipelines/{name}/codegen-scripts/{kind}/versions', {
        params: { path: { name: pipeline, kind } },
      })
      .then(({ data, error, response }) => {
        if (!data) return setProblem(problemOf(error, response));
        setVersions(data);
        if (data.length >= 2) setCompare([data[1].version, data[0].version]);
      });
  }, [pipeline, kind]);

  const restore = useCallback(
    async (version: number) => {
      setProblem(null);
      const { data, error, response } = await api.POST(
        '/api/v1/pipelines/{name}/codegen-scripts/{kind}/versions/{version}/restore',
        { params: { path: { name: pipeline, kind, version } } },
      );
      if (!data) return setProblem(problemOf(error, response));
      if (data.noop) return setNotice(`Version ${version} is the live text already: nothing changed.`);
      restored();
    },
    [pipeline, kind, restored],
  );

  return (
    <div className="kind-versions">
      <h3>
        {kind} <small>live version {entry.version ?? '–'}</small> <StatusBadge status={entry.status} />
      </h3>
      {entry.pendingReason && <p className="problem">{entry.pendingReason}</p>}
      <Refused reason={refused} />
      <Problem text={problem} />
      {notice && (
        <p className="notice" role="status">
          {notice}
        </p>
      )}
      {versions && (
        <div className="table-wrap">
          <table aria-label={`${kind} versions`}>
            <thead>
              <tr>
                <th scope="col">Version</th>
                <th scope="col">Origin</th>
                <th scope="col">Model</th>
                <th scope="col">Written</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {versions.map((v, i) => (
                <tr key={v.version}>
                  <td>{v.version}</td>
                  <td>{v.origin ?? '–'}</td>
                  <td>{v.model ?? '–'}</td>
                  <td>{v.generatedAt ? new Date(v.generatedAt).toLocaleString() : '–'}</td>
                  <td className="row">
                    {i + 1 < versions.length && (
                      <button
                        type="button"
                        onClick={() => setCompare([versions[i + 1].version, v.version])}
                        aria-label={`Compare ${kind} version ${v.version} with ${versions[i + 1].version}`}
                      >
                        Diff
                      </button>
                    )}
                    {v.version !== entry.version && (
                      <button
                        type="button"
                        disabled={refused !== null}
                        onClick={() => void restore(v.version)}
                        aria-label={`Restore ${kind} version ${v.version}`}
                      >
                        Restore
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {compare && (
        <CompareVersions
          key={compare.join('-')}
          pipeline={pipeline}
          kind={kind}
          before={compare[0]}
          after={compare[1]}
        />
      )}
    </div>
  );
}

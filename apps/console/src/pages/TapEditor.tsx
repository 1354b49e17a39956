import { type FormEvent, type ReactNode, Suspense, lazy, useCallback, useEffect, useState } from 'react';
import { api, problemOf, type Schemas } from '../api/client';
import { Problem, Refused } from '../components';
import type { ReviewFacts, TestFacts } from '../logic/tap-authoring-flow';
import { parsePackages } from '../logic/taps';
import { navigate } from '../router';
import { useRefusal } from '../session';
import { TapAi } from './TapAi';
import { CronFromEnglish } from './TapCron';
import { History, RunResultView, TestResultView } from './TapResults';

// The editor (CodeMirror) is the heaviest code of the console: fetched only when a tap opens.
const CodeEditor = lazy(() => import('../components/CodeEditor'));

type Tap = Schemas['TapWithScriptDto'];

/** What the form edits: the tap's configuration as `POST /tap` takes it (packages as text). */
interface Form {
  name: string;
  description: string;
  targetPipeline: string;
  secretName: string;
  packages: string;
  cronExpression: string;
  timezone: string;
  enabled: boolean;
  tapType: 'structured' | 'document';
  catalog: string;
}

const EMPTY: Form = {
  name: '',
  description: '',
  targetPipeline: '',
  secretName: '',
  packages: '',
  cronExpression: '',
  timezone: 'UTC',
  enabled: false,
  tapType: 'structured',
  catalog: '',
};

const STARTER = `import os


def fetch():
    limit = int(os.environ.get("SERVICE_TAP_TEST_LIMIT", "0") or 0)
    n = limit if limit > 0 else 10
    for i in range(n):
        yield {"id": i}
`;

function formOf(tap: Tap): Form {
  return {
    name: tap.name,
    description: tap.description,
    targetPipeline: tap.targetPipeline,
    secretName: tap.secretName ?? '',
    packages: tap.packages.join(', '),
    cronExpression: tap.cronExpression ?? '',
    timezone: tap.timezone,
    enabled: tap.enabled,
    tapType: tap.tapType === 'document' ? 'document' : 'structured',
    catalog: tap.catalog ?? '',
  };
}

/** The configuration as the API takes it (empty text: none). */
function configOf(form: Form): Schemas['TapConfigDto'] {
  return {
    name: form.name.trim(),
    description: form.description,
    targetPipeline: form.targetPipeline.trim(),
    secretName: form.secretName.trim() || null,
    packages: parsePackages(form.packages),
    cronExpression: form.cronExpression.trim() || null,
    timezone: form.timezone.trim() || 'UTC',
    enabled: form.enabled,
    tapType: form.tapType,
    catalog: form.catalog.trim() || null,
  };
}

/** One tap: its configuration and schedule, the script in an editor, test, run, history and the AI flow. */
export function TapEditor({ name }: { name: string | null }): ReactNode {
  const updateRefused = useRefusal('tap:update');
  const runRefused = useRefusal('tap:run');
  const deleteRefused = useRefusal('tap:delete');
  const secretUseRefused = useRefusal('secret:use');
  const [tap, setTap] = useState<Tap | null>(null);
  const [form, setForm] = useState<Form>(EMPTY);
  const [script, setScript] = useState(name === null ? STARTER : '');
  const [runs, setRuns] = useState<Schemas['RunLogEntryDto'][]>([]);
  const [problem, setProblem] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [test, setTest] = useState<Schemas['TestResultDto'] | null>(null);
  const [lastTest, setLastTest] = useState<TestFacts | null>(null);
  const [lastReview, setLastReview] = useState<ReviewFacts | null>(null);
  const [run, setRun] = useState<Schemas['RunResultDto'] | null>(null);
  const [confirmDelete, setConfirmDelete] = useState('');
  const [pipelines, setPipelines] = useState<string[]>([]);
  const [secrets, setSecrets] = useState<string[]>([]);
  const secretReadRefused = useRefusal('secret:read');

  const loadRuns = useCallback(async (tapName: string) => {
    const { data } = await api.GET('/api/v1/tap/runs', { params: { query: { name: tapName } } });
    if (data) setRuns(data);
  }, []);

  const load = useCallback(
    async (tapName: string) => {
      const { data, error, response } = await api.GET('/api/v1/tap', {
        params: { query: { name: tapName } },
      });
      if (!data) return setProblem(problemOf(error, response));
      setTap(data);
      setForm(formOf(data));
      setScript(data.script ?? '');
      await loadRuns(tapName);
    },
    [loadRuns],
  );

  useEffect(() => {
    if (name !== null) void load(name);
    void api.GET('/api/v1/pipelines').then(({ data }) => setPipelines((data ?? []).map((p) => p.name)));
  }, [load, name]);

  useEffect(() => {
    // Names only (never values): the tap is given a secret by name.
    if (!secretReadRefused) void api.GET('/api/v1/secrets').then(({ data }) => setSecrets(data ?? []));
  }, [secretReadRefused]);

  const set = <K extends keyof Form>(key: K, value: Form[K]): void =>
    setForm((f) => ({ ...f, [key]: value }));
  const tapName = tap?.name ?? form.name.trim();

  /** Saves the form and the editor's script (or adopts a stored version: `scriptPath`). */
  const save = async (version?: { scriptPath: string; packages: string[] }): Promise<boolean> => {
    setProblem(null);
    setNotice(null);
    const config = configOf(form);
    const body: Schemas['TapConfigDto'] = version
      ? { ...config, scriptPath: version.scriptPath, packages: version.packages }
      : script !== (tap?.script ?? '')
        ? { ...config, script }
        : config;
    const { data, error, response } = await api.POST('/api/v1/tap', { body });
    if (!data) {
      setProblem(problemOf(error, response));
      return false;
    }
    setNotice(`Saved ${data.name}${data.scriptPath ? ` (script ${data.scriptPath})` : ''}.`);
    if (name === null) navigate(`/taps?tap=${encodeURIComponent(data.name)}`);
    else await load(data.name);
    return true;
  };

  const submit = (e: FormEvent): void => {
    e.preventDefault();
    void save();
  };

  const runTest = async (): Promise<void> => {
    setProblem(null);
    setBusy('Testing…');
    const tested = script;
    const { data, error, response } = await api.POST('/api/v1/tap/test', {
      params: { query: { testLimit: 20 } },
      body: { ...configOf(form), name: tapName, script: tested },
    });
    setBusy(null);
    if (!data) return setProblem(problemOf(error, response));
    setTest(data);
    setLastTest({ script: tested, ...data });
    if (tap) await loadRuns(tap.name);
  };

  const runNow = async (): Promise<void> => {
    if (!tap) return;
    setProblem(null);
    setBusy('Running…');
    const { data, error, response } = await api.POST('/api/v1/tap/run', {
      body: { name: tap.name, mode: 'run' },
    });
    setBusy(null);
    if (!data) return setProblem(problemOf(error, response));
    setRun(data);
    await loadRuns(tap.name);
  };

  const remove = async (): Promise<void> => {
    if (!tap) return;
    const { data, error, response } = await api.DELETE('/api/v1/tap', {
      params: { query: { name: tap.name } },
    });
    if (!data) return setProblem(problemOf(error, response));
    navigate('/taps');
  };

  const unsaved = tap !== null && script !== (tap.script ?? '');
  const secretNote =
    form.secretName.trim() && secretUseRefused
      ? `${secretUseRefused} Saving new code for a tap with a secret, or testing it unsaved, needs it.`
      : null;

  return (
    <>
      <p>
        <a
          href="/taps"
          onClick={(e) => {
            e.preventDefault();
            navigate('/taps');
          }}
        >
          ← All taps
        </a>
      </p>
      <h2>{tap ? `Tap ${tap.name}` : 'New tap'}</h2>
      <Problem text={problem} />
      {notice && (
        <p className="notice" role="status">
          {notice}
        </p>
      )}
      <form onSubmit={submit} aria-label="Tap configuration" className="panel tap-form">
        <fieldset disabled={updateRefused !== null}>
          <div className="grid">
            <label>
              Name
              <input
                value={form.name}
                onChange={(e) => set('name', e.target.value)}
                required
                pattern="[A-Za-z0-9][A-Za-z0-9_\-]*"
                maxLength={128}
                readOnly={tap !== null}
              />
            </label>
            <label>
              Target pipeline
              <input
                value={form.targetPipeline}
                onChange={(e) => set('targetPipeline', e.target.value)}
                list="tap-pipelines"
              />
              <datalist id="tap-pipelines">
                {pipelines.map((p) => (
                  <option key={p} value={p} />
                ))}
              </datalist>
            </label>
            <label>
              Secret (by name; its values never show here)
              <input
                value={form.secretName}
                onChange={(e) => set('secretName', e.target.value)}
                list="tap-secrets"
                autoComplete="off"
              />
              <datalist id="tap-secrets">
                {secrets.map((s) => (
                  <option key={s} value={s} />
                ))}
              </datalist>
            </label>
            <label>
              Packages (pip specs)
              <input
                value={form.packages}
                onChange={(e) => set('packages', e.target.value)}
                placeholder="requests==2.32.3"
              />
            </label>
            <label>
              Type
              <select
                value={form.tapType}
                onChange={(e) => set('tapType', e.target.value === 'document' ? 'document' : 'structured')}
                disabled={tap !== null}
              >
                <option value="structured">structured</option>
                <option value="document">document</option>
              </select>
            </label>
            <label>
              Catalog
              <input value={form.catalog} onChange={(e) => set('catalog', e.target.value)} />
            </label>
          </div>
          <label>
            Description
            <textarea
              value={form.description}
              onChange={(e) => set('description', e.target.value)}
              rows={2}
            />
          </label>
          <fieldset className="schedule">
            <legend>Schedule</legend>
            <div className="grid">
              <label>
                Cron expression (Quartz, seconds first)
                <input
                  value={form.cronExpression}
                  onChange={(e) => set('cronExpression', e.target.value)}
                  placeholder="0 0 7 ? * MON-FRI"
                />
              </label>
              <label>
                Time zone
                <input value={form.timezone} onChange={(e) => set('timezone', e.target.value)} />
              </label>
              <label className="check">
                <input
                  type="checkbox"
                  checked={form.enabled}
                  onChange={(e) => set('enabled', e.target.checked)}
                />
                Schedule enabled
              </label>
            </div>
            {tap && tap.nextFireTimes.length > 0 && (
              <p>
                Next fire times (saved schedule):{' '}
                {tap.nextFireTimes.map((t) => new Date(t).toLocaleString()).join(' · ')}
              </p>
            )}
          </fieldset>
          <div className="actions">
            <button type="submit">{tap ? 'Save' : 'Create tap'}</button>
            {unsaved && <span className="unsaved">The script has unsaved changes.</span>}
          </div>
        </fieldset>
        <Refused reason={updateRefused} />
        <Refused reason={secretNote} />
      </form>

      <section aria-labelledby="cron-title" className="panel">
        <h2 id="cron-title">Cron from English</h2>
        <CronFromEnglish
          timezone={form.timezone}
          disabled={updateRefused !== null}
          use={(cron) => {
            setForm((f) => ({ ...f, cronExpression: cron, enabled: true }));
            setNotice(`Schedule set to ${cron}: save the tap to keep it.`);
          }}
        />
      </section>

      <section aria-labelledby="script-title">
        <h2 id="script-title">Script</h2>
        {tap?.scriptMissing && (
          <p className="problem" role="alert">
            The stored script {tap.scriptPath} is missing from the object store.
          </p>
        )}
        <Suspense fallback={<p>Loading the editor…</p>}>
          <CodeEditor
            label="Script (Python)"
            value={script}
            onChange={setScript}
            readOnly={updateRefused !== null}
          />
        </Suspense>
        <div className="actions">
          <button
            type="button"
            onClick={() => void runTest()}
            disabled={runRefused !== null || busy !== null}
          >
            Test
          </button>
          <button
            type="button"
            onClick={() => void runNow()}
            disabled={runRefused !== null || busy !== null || tap === null}
            title={tap === null ? 'Create the tap first' : undefined}
          >
            Run now
          </button>
          {busy && <span role="status">{busy}</span>}
        </div>
        <Refused reason={runRefused} />
        {tap !== null && unsaved && !runRefused && (
          <small>Run now runs the saved script; Test runs the editor's.</small>
        )}
      </section>

      {test && <TestResultView result={test} />}
      {run && <RunResultView result={run} />}

      <TapAi
        tapName={tapName}
        tapType={form.tapType}
        secretName={form.secretName.trim() || null}
        description={form.description}
        useDescription={(d) => set('description', d)}
        script={script}
        scriptPath={tap?.scriptPath ?? null}
        lastTest={lastTest}
        lastReview={lastReview}
        reviewed={setLastReview}
        adopt={save}
      />

      {tap && <History runs={runs} />}

      {tap && (
        <section aria-labelledby="delete-title" className="panel">
          <h2 id="delete-title">Delete</h2>
          <p>
            Deletes the configuration, its run history, every script version (and a document tap's ledger).
          </p>
          <label>
            Type the tap's name to confirm
            <input
              value={confirmDelete}
              onChange={(e) => setConfirmDelete(e.target.value)}
              disabled={deleteRefused !== null}
              autoComplete="off"
            />
          </label>
          <button
            type="button"
            className="danger"
            onClick={() => void remove()}
            disabled={deleteRefused !== null || confirmDelete !== tap.name}
          >
            Delete {tap.name}
          </button>
          <Refused reason={deleteRefused} />
        </section>
      )}
    </>
  );
}

import { type FormEvent, type ReactNode, useEffect, useId, useState } from 'react';
import { api, problemOf } from '../api/client';
import { Problem, Refused } from '../components';
import {
  type ConfigLike,
  FIELD_TYPES,
  type FieldType,
  type PipelineForm,
  configOf,
  formOf,
  formProblems,
} from '../logic/pipeline-form';
import { useRefusal } from '../session';

/** Registering or changing a pipeline is POST /pipeline, which needs pipeline:update. */
function useSaveRefusal(): string | null {
  return useRefusal('pipeline:update');
}

/** Create from a sample: the file → `POST /pipeline/generate` → the proposal in the form → register. */
export function CreateFromSample({ saved }: { saved: (name: string) => void }): ReactNode {
  const createRefused = useRefusal('pipeline:create');
  const saveRefused = useSaveRefusal();
  const refused = createRefused ?? saveRefused;
  const [file, setFile] = useState<File | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [proposal, setProposal] = useState<ConfigLike | null>(null);

  const propose = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    if (!file) return;
    setProblem(null);
    const { data, error, response } = await api.POST('/api/v1/pipeline/generate', {
      // The generated type says `string` for a binary part; multipart sends the File itself.
      // `delimiter` and `allStrings` have defaults the type marks required; only the file is sent.
      body: { file: file as unknown as string, delimiter: ',', allStrings: false },
      bodySerializer: () => {
        const form = new FormData();
        form.append('file', file, file.name);
        return form;
      },
      parseAs: 'json',
    });
    if (!response.ok) return setProblem(problemOf(error, response));
    // The route documents its answer as a partial configuration without a schema of its own.
    setProposal(data as unknown as ConfigLike);
  };

  return (
    <section aria-labelledby="create-title" className="panel">
      <h2 id="create-title">New pipeline from a sample file</h2>
      <Refused reason={refused} />
      <form onSubmit={propose}>
        <label>
          Sample file (CSV, TSV, JSON or XML)
          <input
            type="file"
            onChange={(e) => setFile(e.target.files?.[0] ?? null)}
            disabled={refused !== null}
          />
        </label>
        <button type="submit" disabled={refused !== null || file === null}>
          Propose a schema
        </button>
      </form>
      <Problem text={problem} />
      {proposal && <PipelineFormView key={JSON.stringify(proposal)} base={proposal} creating saved={saved} />}
    </section>
  );
}

/** Edit: the stored configuration (`GET /pipeline`) with its version, saved back as the next version. */
export function EditPipeline({ name, saved }: { name: string; saved: (name: string) => void }): ReactNode {
  const [stored, setStored] = useState<ConfigLike | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    void api
      .GET('/api/v1/pipeline', { params: { query: { pipeline: name } } })
      .then(({ data, error, response }) => {
        if (data) setStored(data as unknown as ConfigLike);
        else setProblem(problemOf(error, response));
      });
  }, [name]);
  return (
    <section aria-labelledby="edit-title" className="panel">
      <h2 id="edit-title">
        Edit {name}
        {stored && <span data-testid="pipeline-version"> (version {String(stored.version)})</span>}
      </h2>
      <Problem text={problem} />
      {stored && <PipelineFormView base={stored} creating={false} saved={saved} />}
    </section>
  );
}

function PipelineFormView({
  base,
  creating,
  saved,
}: {
  base: ConfigLike;
  creating: boolean;
  saved: (name: string) => void;
}): ReactNode {
  const refused = useSaveRefusal();
  const [form, setForm] = useState<PipelineForm>(() => formOf(base));
  const [problem, setProblem] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const problems = formProblems(form);
  const typeId = useId();

  const setColumn = (i: number, change: Partial<PipelineForm['columns'][number]>): void =>
    setForm((f) => ({ ...f, columns: f.columns.map((c, at) => (at === i ? { ...c, ...change } : c)) }));

  const submit = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    setProblem(null);
    setDone(null);
    if (problems.length > 0) return;
    const { data, error, response } = await api.POST('/api/v1/pipeline', {
      // The form keeps every section it does not show; the API validates the whole configuration.
      body: configOf(base, form) as never,
    });
    if (!data) return setProblem(problemOf(error, response));
    setDone(`Pipeline ${data.name} saved: version ${data.version}.`);
    saved(data.name);
  };

  return (
    <form onSubmit={submit} aria-label={creating ? 'New pipeline' : 'Edit pipeline'}>
      <fieldset disabled={refused !== null}>
        <label>
          Pipeline name
          <input
            value={form.name}
            onChange={(e) => setForm({ ...form, name: e.target.value })}
            readOnly={!creating}
            required
          />
        </label>
        <label>
          Catalog (optional)
          <input value={form.catalog} onChange={(e) => setForm({ ...form, catalog: e.target.value })} />
        </label>
        <label>
          Destination table
          <input value={form.table} onChange={(e) => setForm({ ...form, table: e.target.value })} />
        </label>
        <div className="table-wrap">
          <table aria-label="Columns">
            <thead>
              <tr>
                <th scope="col">Column</th>
                <th scope="col" id={typeId}>
                  Type
                </th>
                <th scope="col">
                  <span className="visually-hidden">Remove</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {form.columns.map((c, i) => (
                <tr key={i}>
                  <td>
                    <input
                      aria-label={`Name of column ${i + 1}`}
                      value={c.name}
                      onChange={(e) => setColumn(i, { name: e.target.value })}
                    />
                  </td>
                  <td>
                    <select
                      aria-label={`Type of column ${i + 1}`}
                      value={c.type}
                      onChange={(e) => setColumn(i, { type: e.target.value as FieldType })}
                    >
                      {FIELD_TYPES.map((t) => (
                        <option key={t}>{t}</option>
                      ))}
                    </select>
                    {c.type === 'decimal' && c.precision !== undefined && (
                      <small>
                        {' '}
                        ({c.precision}, {c.scale ?? 0})
                      </small>
                    )}
                  </td>
                  <td>
                    <button
                      type="button"
                      aria-label={`Remove column ${i + 1}`}
                      onClick={() => setForm({ ...form, columns: form.columns.filter((_, at) => at !== i) })}
                    >
                      Remove
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        <div className="actions">
          <button
            type="button"
            onClick={() => setForm({ ...form, columns: [...form.columns, { name: '', type: 'string' }] })}
          >
            Add a column
          </button>
          <button type="submit" disabled={problems.length > 0}>
            {creating ? 'Register pipeline' : 'Save changes'}
          </button>
        </div>
      </fieldset>
      <Refused reason={refused} />
      {problems.length > 0 && (
        <ul className="refused" aria-label="Form problems">
          {problems.map((p) => (
            <li key={p}>{p}</li>
          ))}
        </ul>
      )}
      <Problem text={problem} />
      {done && (
        <p className="notice" role="status">
          {done}
        </p>
      )}
    </form>
  );
}

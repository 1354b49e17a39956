import { type FormEvent, type ReactNode, useState } from 'react';
import { api, problemOf, type Schemas } from '../api/client';
import { ConfirmedAction, DataTable, Problem, Refused } from '../components';
import { useRefusal } from '../session';
import { useLoaded } from '../useLoaded';

interface FieldRow {
  name: string;
  value: string;
}

/**
 * Secrets of the environment: names, a secret's fields as the API shows them (sensitive ones masked),
 * create, replace the values (rotation), delete. A value typed here leaves the page's state once sent:
 * it is never shown again, and never written to storage.
 */
export function Secrets(): ReactNode {
  const readRefused = useRefusal('secret:read');
  const writeRefused = useRefusal('secret:update');
  const deleteRefused = useRefusal('secret:delete');
  const list = useLoaded(() => api.GET('/api/v1/secrets'), readRefused);
  const [problem, setProblem] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [shown, setShown] = useState<Schemas['SecretDto'] | null>(null);
  const [editing, setEditing] = useState<{ name: string; fields: string[] } | null>(null);
  const [confirming, setConfirming] = useState<string | null>(null);

  const show = async (name: string): Promise<void> => {
    setProblem(null);
    const { data, error, response } = await api.GET('/api/v1/secrets/{name}', { params: { path: { name } } });
    if (!data) return setProblem(problemOf(error, response));
    setShown(data);
  };

  const remove = async (name: string): Promise<void> => {
    setProblem(null);
    setConfirming(null);
    const { data, error, response } = await api.DELETE('/api/v1/secrets/{name}', {
      params: { path: { name } },
    });
    if (!data) return setProblem(problemOf(error, response));
    if (shown?.name === name) setShown(null);
    setNotice(`Secret ${name} deleted.`);
    await list.reload();
  };

  return (
    <>
      <Problem text={problem ?? list.problem} />
      {notice && (
        <p className="notice" role="status">
          {notice}
        </p>
      )}
      <SecretForm
        key={editing?.name ?? 'new'}
        refused={writeRefused}
        replacing={editing}
        saved={(name) => {
          setEditing(null);
          setNotice(`Secret ${name} saved. Its values are not shown again.`);
          if (shown?.name === name) void show(name);
          void list.reload();
        }}
        cancel={() => setEditing(null)}
      />
      <section aria-labelledby="secrets-title">
        <h2 id="secrets-title">Secrets of this environment</h2>
        <Refused reason={readRefused} />
        {list.data && list.data.length === 0 && <p>No secrets yet.</p>}
        {list.data && list.data.length > 0 && (
          <DataTable label="Secrets" columns={['Name', null]}>
            {list.data.map((name) => (
              <tr key={name} data-secret={name}>
                <td>{name}</td>
                <td>
                  <div className="actions">
                    <button type="button" onClick={() => void show(name)} aria-label={`Show ${name} masked`}>
                      Show (masked)
                    </button>
                    <button
                      type="button"
                      disabled={writeRefused !== null}
                      title={writeRefused ?? undefined}
                      aria-label={`Replace the values of ${name}`}
                      onClick={async () => {
                        const { data } = await api.GET('/api/v1/secrets/{name}', {
                          params: { path: { name } },
                        });
                        setEditing({ name, fields: Object.keys(data?.fields ?? {}) });
                      }}
                    >
                      Replace values
                    </button>
                    <ConfirmedAction
                      verb="Delete"
                      doing="deleting"
                      subject={name}
                      asking={confirming === name}
                      refused={deleteRefused}
                      ask={() => setConfirming(name)}
                      confirm={() => void remove(name)}
                    />
                  </div>
                </td>
              </tr>
            ))}
          </DataTable>
        )}
        {shown && (
          <div className="panel" aria-label={`Secret ${shown.name}`} role="region">
            <h3>{shown.name}</h3>
            <dl className="fields">
              {Object.entries(shown.fields).map(([k, v]) => (
                <div key={k}>
                  <dt>{k}</dt>
                  <dd data-testid={`secret-field-${k}`}>{v}</dd>
                </div>
              ))}
            </dl>
            <small>
              Fields named password, apiKey, secretKey, token, secret or privateKey, and passwords in URLs,
              are always masked.
            </small>
          </div>
        )}
      </section>
    </>
  );
}

function SecretForm({
  refused,
  replacing,
  saved,
  cancel,
}: {
  refused: string | null;
  replacing: { name: string; fields: string[] } | null;
  saved: (name: string) => void;
  cancel: () => void;
}): ReactNode {
  const [name, setName] = useState(replacing?.name ?? '');
  const [rows, setRows] = useState<FieldRow[]>(
    replacing && replacing.fields.length > 0
      ? replacing.fields.map((f) => ({ name: f, value: '' }))
      : [{ name: 'password', value: '' }],
  );
  const [problem, setProblem] = useState<string | null>(null);

  const setRow = (i: number, change: Partial<FieldRow>): void =>
    setRows((rs) => rs.map((r, at) => (at === i ? { ...r, ...change } : r)));

  const submit = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    setProblem(null);
    const fields = Object.fromEntries(
      rows.filter((r) => r.name.trim() !== '').map((r) => [r.name.trim(), r.value]),
    );
    const { data, error, response } = await api.PUT('/api/v1/secrets/{name}', {
      params: { path: { name } },
      body: fields,
    });
    // Sent or refused, the values leave the page: a retry means typing them again.
    setRows((rs) => rs.map((r) => ({ ...r, value: '' })));
    if (!data) return setProblem(problemOf(error, response));
    setName('');
    saved(name);
  };

  return (
    <section aria-labelledby="secret-form-title" className="panel">
      <h2 id="secret-form-title">
        {replacing ? `Replace the values of ${replacing.name}` : 'Create a secret'}
      </h2>
      <Refused reason={refused} />
      <form onSubmit={submit}>
        <fieldset disabled={refused !== null}>
          <label>
            Secret name
            <input
              value={name}
              onChange={(e) => setName(e.target.value)}
              readOnly={replacing !== null}
              required
              pattern="[A-Za-z0-9._\/\-]+"
              autoComplete="off"
            />
          </label>
          {rows.map((r, i) => (
            <div className="field-row" key={i}>
              <label>
                Field {i + 1}
                <input
                  value={r.name}
                  onChange={(e) => setRow(i, { name: e.target.value })}
                  autoComplete="off"
                />
              </label>
              <label>
                Value of field {i + 1}
                <input
                  type="password"
                  value={r.value}
                  onChange={(e) => setRow(i, { value: e.target.value })}
                  autoComplete="off"
                />
              </label>
            </div>
          ))}
          <div className="actions">
            <button type="button" onClick={() => setRows([...rows, { name: '', value: '' }])}>
              Add a field
            </button>
            <button type="submit">{replacing ? 'Replace values' : 'Save secret'}</button>
            {replacing && (
              <button type="button" onClick={cancel}>
                Cancel
              </button>
            )}
          </div>
        </fieldset>
      </form>
      <Problem text={problem} />
    </section>
  );
}

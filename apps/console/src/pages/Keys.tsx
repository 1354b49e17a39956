import { type FormEvent, type ReactNode, useId, useState } from 'react';
import { api, problemOf, type Schemas } from '../api/client';
import { ConfirmedAction, DataTable, Problem, Refused } from '../components';
import { useRefusal } from '../session';
import { useLoaded } from '../useLoaded';

type Template = NonNullable<Schemas['IssueKeyDto']['template']>;
const TEMPLATES: Template[] = ['read-only', 'rag-builder', 'reporting', 'ops', 'full-access'];

/** A value the API shows once (issue, rotate): on screen until dismissed, never stored anywhere. */
export interface Shown {
  label: string;
  key: string;
  action: 'issued' | 'rotated';
}

export function Keys(): ReactNode {
  const readRefused = useRefusal('key:read');
  const createRefused = useRefusal('key:create');
  const rotateRefused = useRefusal('key:update');
  const revokeRefused = useRefusal('key:delete');
  const list = useLoaded(() => api.GET('/api/v1/keys'), readRefused);
  const keys = list.data;
  const load = list.reload;
  const [problem, setProblem] = useState<string | null>(null);
  const [shown, setShown] = useState<Shown | null>(null);
  const [confirming, setConfirming] = useState<string | null>(null);

  const rotate = async (label: string): Promise<void> => {
    setProblem(null);
    const { data, error, response } = await api.POST('/api/v1/keys/{label}/rotate', {
      params: { path: { label } },
    });
    if (!data) return setProblem(problemOf(error, response));
    setShown({ label: data.label, key: data.key, action: 'rotated' });
    await load();
  };

  const revoke = async (label: string): Promise<void> => {
    setProblem(null);
    setConfirming(null);
    const { data, error, response } = await api.DELETE('/api/v1/keys/{label}', {
      params: { path: { label } },
    });
    if (!data) return setProblem(problemOf(error, response));
    await load();
  };

  return (
    <>
      <Problem text={problem ?? list.problem} />
      {shown && <ShownOnce shown={shown} dismiss={() => setShown(null)} />}
      <IssueForm
        refused={createRefused}
        issued={(k) => {
          setShown({ label: k.label, key: k.key, action: 'issued' });
          void load();
        }}
      />
      <section aria-labelledby="keys-title">
        <h2 id="keys-title">Keys of this environment</h2>
        <Refused reason={readRefused} />
        {keys && (
          <DataTable
            label="API keys"
            columns={['Label', 'Template', 'Capabilities', 'Created', 'Last used', 'State', null]}
          >
            {keys.map((k) => (
              <tr key={k.label} data-label={k.label}>
                <td>{k.label}</td>
                <td>{k.template ?? 'manual'}</td>
                <td className="caps">{k.capabilities.join(' ')}</td>
                <td>{new Date(k.createdAt).toLocaleString()}</td>
                <td>{k.lastUsedAt ? new Date(k.lastUsedAt).toLocaleString() : 'never'}</td>
                <td>{k.revoked ? 'revoked' : 'active'}</td>
                <td>
                  {!k.revoked && (
                    <div className="actions">
                      <button
                        type="button"
                        onClick={() => void rotate(k.label)}
                        disabled={rotateRefused !== null}
                        title={rotateRefused ?? undefined}
                        aria-label={`Rotate ${k.label}`}
                      >
                        Rotate
                      </button>
                      <ConfirmedAction
                        verb="Revoke"
                        doing="revoking"
                        subject={k.label}
                        asking={confirming === k.label}
                        refused={revokeRefused}
                        ask={() => setConfirming(k.label)}
                        confirm={() => void revoke(k.label)}
                      />
                    </div>
                  )}
                </td>
              </tr>
            ))}
          </DataTable>
        )}
        {keys && (rotateRefused || revokeRefused) && <Refused reason={rotateRefused ?? revokeRefused} />}
      </section>
    </>
  );
}

function IssueForm({
  refused,
  issued,
}: {
  refused: string | null;
  issued: (key: Schemas['IssuedKeyDto']) => void;
}): ReactNode {
  const [label, setLabel] = useState('');
  const [grant, setGrant] = useState<'template' | 'capabilities'>('template');
  const [template, setTemplate] = useState<Template>('read-only');
  const [capabilities, setCapabilities] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const templateId = useId();

  const submit = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    setProblem(null);
    const body =
      grant === 'template'
        ? { label, template }
        : { label, capabilities: capabilities.split(/[\s,]+/).filter((c) => c !== '') };
    const { data, error, response } = await api.POST('/api/v1/keys', { body });
    if (!data) return setProblem(problemOf(error, response));
    setLabel('');
    issued(data);
  };

  return (
    <section aria-labelledby="issue-title" className="panel">
      <h2 id="issue-title">Issue a key</h2>
      <Refused reason={refused} />
      <form onSubmit={submit}>
        <fieldset disabled={refused !== null}>
          <label>
            Label
            <input
              value={label}
              onChange={(e) => setLabel(e.target.value)}
              required
              pattern="[a-z][a-z0-9_-]*"
              maxLength={63}
            />
          </label>
          <fieldset className="inline">
            <legend>Grant</legend>
            <label>
              <input
                type="radio"
                name="grant"
                checked={grant === 'template'}
                onChange={() => setGrant('template')}
              />
              From a template
            </label>
            <label>
              <input
                type="radio"
                name="grant"
                checked={grant === 'capabilities'}
                onChange={() => setGrant('capabilities')}
              />
              A capability list
            </label>
          </fieldset>
          {grant === 'template' ? (
            // Not wrapped: a wrapping label would take the options' text into the select's name.
            <div className="field">
              <label htmlFor={templateId}>Template</label>
              <select
                id={templateId}
                value={template}
                onChange={(e) => setTemplate(e.target.value as Template)}
              >
                {TEMPLATES.map((t) => (
                  <option key={t}>{t}</option>
                ))}
              </select>
            </div>
          ) : (
            <label>
              Capabilities (resource:action[:scope], one per line)
              <textarea
                value={capabilities}
                onChange={(e) => setCapabilities(e.target.value)}
                rows={3}
                required
              />
            </label>
          )}
          <button type="submit">Issue key</button>
        </fieldset>
      </form>
      <Problem text={problem} />
    </section>
  );
}

export function ShownOnce({ shown, dismiss }: { shown: Shown; dismiss: () => void }): ReactNode {
  const [copied, setCopied] = useState<string | null>(null);
  const copy = async (): Promise<void> => {
    try {
      await navigator.clipboard.writeText(shown.key);
      setCopied('Copied.');
    } catch {
      setCopied('The browser refused the clipboard: select the value and copy it.');
    }
  };
  return (
    <section className="panel shown-once" role="status" aria-labelledby="shown-title">
      <h2 id="shown-title">
        Key {shown.label} {shown.action}
      </h2>
      <p>This value is shown once: Tapyard keeps only a digest of it. Copy it now.</p>
      <output aria-label="Key value" data-testid="key-value">
        {shown.key}
      </output>
      <div className="actions">
        <button type="button" onClick={() => void copy()}>
          Copy
        </button>
        <button type="button" onClick={dismiss}>
          Done
        </button>
      </div>
      {copied && <p>{copied}</p>}
    </section>
  );
}

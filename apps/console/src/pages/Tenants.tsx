import { type FormEvent, type ReactNode, useContext, useEffect, useId, useState } from 'react';
import { api, problemOf, type Schemas } from '../api/client';
import { Problem, Refused } from '../components';
import { tenantRefusal } from '../logic/tenants';
import { SessionContext } from '../session';
import { type Shown, ShownOnce } from './Keys';

type Template = NonNullable<Schemas['IssueKeyDto']['template']>;
const TEMPLATES: Template[] = ['full-access', 'ops', 'rag-builder', 'reporting', 'read-only'];

/**
 * Tenants (MULTI_TENANT=true): a tenant exists once a key maps to it. The operator issues a tenant's first
 * key (`POST /keys {tenant}`), maps a key value made elsewhere, or removes a value's mappings; all need
 * full access (`*:*`) in the operator environment. The API lists no tenants, so neither does this page.
 */
export function Tenants(): ReactNode {
  const session = useContext(SessionContext);
  const [multiTenant, setMultiTenant] = useState<boolean | null>(null);
  const [shown, setShown] = useState<Shown | null>(null);
  const refused = tenantRefusal(session?.me ?? null);
  useEffect(() => {
    void api.GET('/api/v1/auth/mode').then(({ data }) => setMultiTenant(data?.multiTenant ?? false));
  }, []);
  if (multiTenant === null) return <p>Loading…</p>;
  if (!multiTenant)
    return (
      <p className="notice">
        This instance is not multi-tenant (<code>MULTI_TENANT</code> is off): every key and user acts in one
        environment, so there are no tenants to administer.
      </p>
    );
  return (
    <>
      <Refused reason={refused} />
      {shown && <ShownOnce shown={shown} dismiss={() => setShown(null)} />}
      <FirstKey refused={refused} issued={setShown} />
      <MapValue refused={refused} />
    </>
  );
}

function FirstKey({ refused, issued }: { refused: string | null; issued: (s: Shown) => void }): ReactNode {
  const [tenant, setTenant] = useState('');
  const [label, setLabel] = useState('');
  const [template, setTemplate] = useState<Template>('full-access');
  const templateId = useId();
  const [problem, setProblem] = useState<string | null>(null);
  const submit = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    setProblem(null);
    const { data, error, response } = await api.POST('/api/v1/keys', { body: { label, template, tenant } });
    if (!data) return setProblem(problemOf(error, response));
    issued({ label: `${data.label} of tenant ${tenant}`, key: data.key, action: 'issued' });
    setLabel('');
  };
  return (
    <section aria-labelledby="tenant-key-title" className="panel">
      <h2 id="tenant-key-title">Issue a tenant's key</h2>
      <p>
        The key is kept in the tenant's own key map; the tenant's admins then issue and revoke their own keys.
      </p>
      <form onSubmit={submit}>
        <fieldset disabled={refused !== null}>
          <label>
            Tenant
            <input value={tenant} onChange={(e) => setTenant(e.target.value)} required autoComplete="off" />
          </label>
          <label>
            Key label
            <input
              value={label}
              onChange={(e) => setLabel(e.target.value)}
              required
              pattern="[a-z][a-z0-9_-]*"
              autoComplete="off"
            />
          </label>
          <div className="field">
            <label htmlFor={templateId}>Key template</label>
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
          <button type="submit">Issue tenant key</button>
        </fieldset>
      </form>
      <Problem text={problem} />
    </section>
  );
}

function MapValue({ refused }: { refused: string | null }): ReactNode {
  const [key, setKey] = useState('');
  const [tenant, setTenant] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const send = async (remove: boolean): Promise<void> => {
    setProblem(null);
    setNotice(null);
    const { data, error, response } = remove
      ? await api.POST('/api/v1/keys/tenant-mappings/remove', { body: { key } })
      : await api.POST('/api/v1/keys/tenant-mappings', { body: { key, tenant } });
    // The value leaves the page once sent, whatever the answer.
    setKey('');
    if (!data) return setProblem(problemOf(error, response));
    setNotice(
      remove ? 'Every mapping of that value was removed.' : `The value now acts in tenant ${tenant}.`,
    );
  };
  return (
    <section aria-labelledby="tenant-map-title" className="panel">
      <h2 id="tenant-map-title">Map a key value made elsewhere</h2>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void send(false);
        }}
      >
        <fieldset disabled={refused !== null}>
          <label>
            Key value (24 characters or more)
            <input
              type="password"
              value={key}
              onChange={(e) => setKey(e.target.value)}
              minLength={24}
              required
              autoComplete="off"
            />
          </label>
          <label>
            Tenant to map it to
            <input value={tenant} onChange={(e) => setTenant(e.target.value)} autoComplete="off" />
          </label>
          <div className="actions">
            <button type="submit" disabled={tenant === ''}>
              Map to tenant
            </button>
            <button type="button" disabled={key.length < 24} onClick={() => void send(true)}>
              Remove its mappings
            </button>
          </div>
        </fieldset>
      </form>
      {notice && (
        <p className="notice" role="status">
          {notice}
        </p>
      )}
      <Problem text={problem} />
    </section>
  );
}

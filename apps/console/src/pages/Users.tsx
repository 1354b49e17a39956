import { type FormEvent, type ReactNode, useId, useState } from 'react';
import { api, problemOf, type Schemas } from '../api/client';
import { ConfirmedAction, DataTable, Problem, Refused } from '../components';
import { useRefusal } from '../session';
import { useLoaded } from '../useLoaded';

type Role = Schemas['UserDto']['role'];
const ROLES: Role[] = ['viewer', 'editor', 'admin'];

/** Login users (USE_USER_AUTH): list, create, change a role, reset a password, delete (docs/auth.md). */
export function Users(): ReactNode {
  const readRefused = useRefusal('user:read');
  const createRefused = useRefusal('user:create');
  const updateRefused = useRefusal('user:update');
  const deleteRefused = useRefusal('user:delete');
  const list = useLoaded(() => api.GET('/api/v1/users'), readRefused);
  const [problem, setProblem] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [confirming, setConfirming] = useState<string | null>(null);

  const change = async (username: string, body: Schemas['UpdateUserDto'], what: string): Promise<boolean> => {
    setProblem(null);
    setNotice(null);
    const { data, error, response } = await api.PUT('/api/v1/users/{username}', {
      params: { path: { username } },
      body,
    });
    if (!data) {
      setProblem(problemOf(error, response));
      return false;
    }
    setNotice(`${username}: ${what}. Their login sessions have ended.`);
    await list.reload();
    return true;
  };

  const remove = async (username: string): Promise<void> => {
    setProblem(null);
    setConfirming(null);
    const { data, error, response } = await api.DELETE('/api/v1/users/{username}', {
      params: { path: { username } },
    });
    if (!data) return setProblem(problemOf(error, response));
    setNotice(`${username} deleted.`);
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
      <CreateUser refused={createRefused} created={() => void list.reload()} />
      <section aria-labelledby="users-title">
        <h2 id="users-title">Users</h2>
        <Refused reason={readRefused} />
        {list.data && (
          <DataTable label="Users" columns={['Username', 'Role', 'Created', null]}>
            {list.data.map((u) => (
              <tr key={u.username} data-user={u.username}>
                <td>{u.username}</td>
                <td>
                  <select
                    aria-label={`Role of ${u.username}`}
                    value={u.role}
                    disabled={updateRefused !== null}
                    title={updateRefused ?? undefined}
                    onChange={(e) =>
                      void change(
                        u.username,
                        { role: e.target.value as Role },
                        `role is now ${e.target.value}`,
                      )
                    }
                  >
                    {ROLES.map((r) => (
                      <option key={r}>{r}</option>
                    ))}
                  </select>
                </td>
                <td>{new Date(u.createdAt).toLocaleString()}</td>
                <td>
                  <div className="actions">
                    <ResetPassword
                      username={u.username}
                      refused={updateRefused}
                      reset={(password) => change(u.username, { password }, 'password reset')}
                    />
                    <ConfirmedAction
                      verb="Delete"
                      doing="deleting"
                      subject={u.username}
                      asking={confirming === u.username}
                      refused={deleteRefused}
                      ask={() => setConfirming(u.username)}
                      confirm={() => void remove(u.username)}
                    />
                  </div>
                </td>
              </tr>
            ))}
          </DataTable>
        )}
        {list.data && (updateRefused || deleteRefused) && <Refused reason={updateRefused ?? deleteRefused} />}
      </section>
    </>
  );
}

function CreateUser({ refused, created }: { refused: string | null; created: () => void }): ReactNode {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [role, setRole] = useState<Role>('viewer');
  const roleId = useId();
  const [problem, setProblem] = useState<string | null>(null);

  const submit = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    setProblem(null);
    const { data, error, response } = await api.POST('/api/v1/users', { body: { username, password, role } });
    // The password leaves the page's state either way: it is never kept once sent.
    setPassword('');
    if (!data) return setProblem(problemOf(error, response));
    setUsername('');
    created();
  };

  return (
    <section aria-labelledby="create-user-title" className="panel">
      <h2 id="create-user-title">Create a user</h2>
      <Refused reason={refused} />
      <form onSubmit={submit}>
        <fieldset disabled={refused !== null}>
          <label>
            Username
            <input
              value={username}
              onChange={(e) => setUsername(e.target.value)}
              required
              autoComplete="off"
            />
          </label>
          <label>
            Password (12 characters or more)
            <input
              type="password"
              value={password}
              onChange={(e) => setPassword(e.target.value)}
              required
              minLength={12}
              autoComplete="new-password"
            />
          </label>
          {/* Not wrapped: a wrapping label would take the options' text into the select's name. */}
          <div className="field">
            <label htmlFor={roleId}>Role</label>
            <select id={roleId} value={role} onChange={(e) => setRole(e.target.value as Role)}>
              {ROLES.map((r) => (
                <option key={r}>{r}</option>
              ))}
            </select>
          </div>
          <button type="submit">Create user</button>
        </fieldset>
      </form>
      <Problem text={problem} />
    </section>
  );
}

function ResetPassword({
  username,
  refused,
  reset,
}: {
  username: string;
  refused: string | null;
  reset: (password: string) => Promise<boolean>;
}): ReactNode {
  const [open, setOpen] = useState(false);
  const [password, setPassword] = useState('');
  if (!open)
    return (
      <button
        type="button"
        onClick={() => setOpen(true)}
        disabled={refused !== null}
        title={refused ?? undefined}
        aria-label={`Reset the password of ${username}`}
      >
        Reset password
      </button>
    );
  return (
    <form
      className="actions"
      onSubmit={(e) => {
        e.preventDefault();
        void reset(password).then((ok) => {
          setPassword('');
          if (ok) setOpen(false);
        });
      }}
    >
      <input
        type="password"
        aria-label={`New password for ${username}`}
        value={password}
        onChange={(e) => setPassword(e.target.value)}
        minLength={12}
        required
        autoComplete="new-password"
      />
      <button type="submit">Set password</button>
      <button type="button" onClick={() => setOpen(false)}>
        Cancel
      </button>
    </form>
  );
}

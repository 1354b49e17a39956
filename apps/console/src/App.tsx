import { type FormEvent, type ReactNode, useCallback, useEffect, useState } from 'react';
import { api, onCredentialsEnded, pastedKey, problemOf, type Schemas } from './api/client';
import { Problem } from './components';
import {
  type AuthMode,
  type SignInKind,
  endedMessage,
  pastedKeyProblem,
  signInKind,
} from './logic/auth-mode';
import { DataPage } from './pages/data-pages';
import { Keys } from './pages/Keys';
import { Overview } from './pages/Overview';
import { Pipelines } from './pages/Pipelines';
import { Secrets } from './pages/Secrets';
import { Tenants } from './pages/Tenants';
import { Users } from './pages/Users';
import { Taps } from './pages/Taps';
import { navigate, usePath } from './router';
import { SessionContext } from './session';

type State =
  | { phase: 'loading' }
  | { phase: 'unreachable'; problem: string }
  | { phase: 'sign-in'; kind: SignInKind; notice: string | null }
  | { phase: 'signed-in'; kind: SignInKind; me: Schemas['MeDto'] };

const PAGES: { path: string; title: string }[] = [
  { path: '/', title: 'Overview' },
  { path: '/pipelines', title: 'Pipelines' },
  { path: '/taps', title: 'Taps' },
  { path: '/documents', title: 'Documents and search' },
  { path: '/query', title: 'Query' },
  { path: '/assistant', title: 'Assistant' },
  { path: '/incidents', title: 'CodeGen and incidents' },
  { path: '/admin/keys', title: 'API keys' },
  { path: '/admin/users', title: 'Users' },
  { path: '/admin/secrets', title: 'Secrets' },
  { path: '/admin/tenants', title: 'Tenants' },
];

export function App(): ReactNode {
  const [state, setState] = useState<State>({ phase: 'loading' });

  /** Asks who the caller is; a 401 means signing in first. */
  const identify = useCallback(async (kind: SignInKind, notice: string | null = null) => {
    const { data, response } = await api.GET('/api/v1/auth/me');
    // With USE_USER_AUTH alone, programs are anonymous, but the console is still gated by the login.
    if (data && !(kind === 'login' && data.kind === 'anonymous'))
      setState({ phase: 'signed-in', kind, me: data });
    else if (data || response.status === 401) setState({ phase: 'sign-in', kind, notice });
    else setState({ phase: 'unreachable', problem: `The API answered ${response.status} to who am I.` });
  }, []);

  useEffect(() => {
    void (async () => {
      const { data, response } = await api
        .GET('/api/v1/auth/mode')
        .catch(() => ({ data: undefined, response: null }));
      if (!data) {
        setState({
          phase: 'unreachable',
          problem: `The API is not reachable${response ? ` (${response.status})` : ''}.`,
        });
        return;
      }
      await identify(signInKind(data as AuthMode));
    })();
  }, [identify]);

  useEffect(() => {
    onCredentialsEnded(() =>
      setState((s) =>
        s.phase === 'signed-in' ? { phase: 'sign-in', kind: s.kind, notice: endedMessage(s.kind) } : s,
      ),
    );
  }, []);

  const signOut = async (kind: SignInKind): Promise<void> => {
    if (kind === 'login') await api.POST('/api/v1/auth/logout');
    pastedKey.clear();
    setState({ phase: 'sign-in', kind, notice: 'Signed out.' });
  };

  switch (state.phase) {
    case 'loading':
      return <p className="centered">Loading…</p>;
    case 'unreachable':
      return <Problem text={state.problem} />;
    case 'sign-in':
      return (
        <SignIn
          kind={state.kind}
          notice={state.notice}
          done={() => identify(state.kind, 'That did not sign you in.')}
        />
      );
    case 'signed-in':
      return (
        <SessionContext.Provider value={{ me: state.me }}>
          <Shell me={state.me} kind={state.kind} signOut={() => signOut(state.kind)} />
        </SessionContext.Provider>
      );
  }
}

function Shell({
  me,
  kind,
  signOut,
}: {
  me: Schemas['MeDto'];
  kind: SignInKind;
  signOut: () => void;
}): ReactNode {
  const path = usePath();
  const page = PAGES.find((p) => p.path === path) ?? PAGES[0];
  useEffect(() => {
    document.title = `${page.title} · Tapyard`;
  }, [page]);
  return (
    <div className="shell">
      <header>
        <span className="brand">Tapyard</span>
        <nav aria-label="Pages">
          {PAGES.map((p) => (
            <a
              key={p.path}
              href={p.path}
              aria-current={p.path === page.path ? 'page' : undefined}
              onClick={(e) => {
                e.preventDefault();
                navigate(p.path);
              }}
            >
              {p.title}
            </a>
          ))}
        </nav>
        <span className="who" data-testid="identity">
          {me.kind === 'anonymous' ? 'anonymous (no sign-in on this instance)' : me.identity}
          {me.role ? ` · ${me.role}` : ''}
        </span>
        {kind !== 'open' && (
          <button type="button" onClick={signOut}>
            Sign out
          </button>
        )}
      </header>
      <main>
        <h1>{page.title}</h1>
        {page.path === '/' && <Overview />}
        {page.path === '/pipelines' && <Pipelines />}
        {page.path === '/taps' && <Taps />}
        {page.path === '/admin/keys' && <Keys />}
        {page.path === '/documents' && <DataPage name="documents" />}
        {page.path === '/query' && <DataPage name="query" />}
        {page.path === '/assistant' && <DataPage name="assistant" />}
        {page.path === '/incidents' && <DataPage name="incidents" />}
        {page.path === '/admin/users' && <Users />}
        {page.path === '/admin/secrets' && <Secrets />}
        {page.path === '/admin/tenants' && <Tenants />}
      </main>
    </div>
  );
}

function SignIn({
  kind,
  notice,
  done,
}: {
  kind: SignInKind;
  notice: string | null;
  done: () => void;
}): ReactNode {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [key, setKey] = useState('');
  const [problem, setProblem] = useState<string | null>(null);

  const submit = async (e: FormEvent): Promise<void> => {
    e.preventDefault();
    setProblem(null);
    if (kind === 'login') {
      const { error, response } = await api.POST('/api/v1/auth/login', { body: { username, password } });
      if (!response.ok) return setProblem(problemOf(error, response));
    } else {
      const bad = pastedKeyProblem(key);
      if (bad) return setProblem(bad);
      pastedKey.set(key.trim());
      const { response } = await api.GET('/api/v1/auth/me');
      if (!response.ok) {
        pastedKey.clear();
        return setProblem(
          response.status === 401
            ? 'This key is not valid here (unknown, rotated or revoked).'
            : `${response.status}`,
        );
      }
    }
    done();
  };

  return (
    <main className="sign-in">
      <h1>Tapyard console</h1>
      {notice && (
        <p className="notice" role="status">
          {notice}
        </p>
      )}
      <form onSubmit={submit} aria-label="Sign in">
        {kind === 'login' ? (
          <>
            <label>
              Username
              <input
                autoComplete="username"
                value={username}
                onChange={(e) => setUsername(e.target.value)}
                required
              />
            </label>
            <label>
              Password
              <input
                type="password"
                autoComplete="current-password"
                value={password}
                onChange={(e) => setPassword(e.target.value)}
                required
              />
            </label>
          </>
        ) : (
          <label>
            API key
            <input
              type="password"
              autoComplete="off"
              value={key}
              onChange={(e) => setKey(e.target.value)}
              aria-describedby="key-help"
              required
            />
            <small id="key-help">
              This instance signs programs in by key (USE_API_KEYS). The key is kept in this tab only (session
              storage) and forgotten when it closes.
            </small>
          </label>
        )}
        <Problem text={problem} />
        <button type="submit">Sign in</button>
      </form>
    </main>
  );
}

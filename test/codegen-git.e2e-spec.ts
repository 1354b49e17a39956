import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { ValidationError, parseAllowList } from '@tapyard/core';
import { EgressPolicy } from '@tapyard/egress';
import {
  GitRepository,
  RepositoryCommitNotFoundError,
  RepositoryConflictError,
  RepositoryFileTooLargeError,
  RepositorySettings,
  RepositoryUnavailableError,
  repositorySettings,
} from '@tapyard/code-repository';
import { GitServer, startGitServer } from './support/git-server';
import { blackhole, closedPort } from './support/net';

const USER = 'coder';
const PASSWORD = 'pa55-Wörd-s3cret';
const TOKEN = 'ghp_Tok3nValue0123456789';
const SCRIPT = 'pipelines/sales/data-quality.py';

function loopbackPolicy(): EgressPolicy {
  const allow = parseAllowList('127.0.0.1');
  if (typeof allow === 'string') throw new Error(allow);
  return new EgressPolicy(allow, undefined, 'CODE_REPOSITORY_ALLOW');
}

/** The ValidationError `run` throws, for its field and message. */
function validationOf(run: () => unknown): ValidationError {
  try {
    run();
  } catch (err) {
    if (err instanceof ValidationError) return err;
    throw err;
  }
  throw new Error('expected a ValidationError');
}

async function rejectionOf<T extends Error>(
  promise: Promise<unknown>,
  type: new (...a: never[]) => T,
): Promise<T> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof type) return err;
    throw err;
  }
  throw new Error(`expected a ${type.name}`);
}

describe('code-repository settings', () => {
  const field = (fields: Record<string, string>) =>
    validationOf(() => repositorySettings(fields)).details?.[0].field;

  it('applies the defaults', () => {
    expect(repositorySettings({ url: 'https://git.example.com/team/scripts.git' })).toEqual({
      url: 'https://git.example.com/team/scripts.git',
      branch: 'main',
      pathPrefix: '',
      auth: null,
      authorName: 'Tapyard',
      authorEmail: 'tapyard@localhost',
    });
  });

  it('reads a token as the x-access-token user, or a username and password', () => {
    const url = 'https://git.example.com/r.git';
    expect(repositorySettings({ url, token: 't0k' }).auth).toEqual({
      username: 'x-access-token',
      password: 't0k',
    });
    expect(repositorySettings({ url, username: 'u', password: 'p' }).auth).toEqual({
      username: 'u',
      password: 'p',
    });
    expect(field({ url, username: 'u' })).toBe('password');
    expect(field({ url, password: 'p' })).toBe('username');
    expect(field({ url, username: 'a:b', password: 'p' })).toBe('username');
    expect(repositorySettings({ url, authorName: 'Bot', authorEmail: 'bot@example.com' })).toMatchObject({
      authorName: 'Bot',
      authorEmail: 'bot@example.com',
    });
    expect(field({ url, authorEmail: '<evil>' })).toBe('authorEmail');
  });

  it('accepts only http and https URLs without credentials', () => {
    expect(field({})).toBe('url');
    for (const url of [
      'ssh://git@example.com/r.git',
      'file:///tmp/r.git',
      'git://example.com/r',
      'not a url',
    ]) {
      expect(field({ url })).toBe('url');
    }
    const withCreds = validationOf(() => repositorySettings({ url: 'https://me:hunter2@example.com/r.git' }));
    expect(withCreds.details?.[0].field).toBe('url');
    expect(withCreds.message).not.toContain('hunter2');
    expect(field({ url: 'https://evil.example\\@127.0.0.1/r.git' })).toBe('url');
    expect(field({ url: 'https://exa\nmple.com/r.git' })).toBe('url');
    expect(repositorySettings({ url: 'http://127.0.0.1:3000/r.git' }).url).toBe(
      'http://127.0.0.1:3000/r.git',
    );
  });

  it('refuses branch names git would refuse', () => {
    const url = 'https://example.com/r.git';
    expect(repositorySettings({ url, branch: 'feature/codegen-1' }).branch).toBe('feature/codegen-1');
    for (const branch of [
      'a..b',
      '-x',
      'a b',
      'a~1',
      'a^',
      'a:b',
      'a?',
      'a*',
      'a[b',
      'a\\b',
      'x\u0001',
      '.hidden',
      'a.lock',
      'a/',
      '/a',
      'a//b',
      '@',
      'a@{1}',
    ]) {
      expect(field({ url, branch })).toBe('branch');
    }
  });

  it('normalises the path prefix and refuses one that leaves the repository', () => {
    const url = 'https://example.com/r.git';
    expect(repositorySettings({ url, pathPrefix: 'scripts' }).pathPrefix).toBe('scripts/');
    expect(repositorySettings({ url, pathPrefix: 'a/b/' }).pathPrefix).toBe('a/b/');
    for (const pathPrefix of ['../x', 'a/../b', '..', '/abs', 'a//b', '.git', 'a/./b']) {
      expect(field({ url, pathPrefix })).toBe('pathPrefix');
    }
  });
});

describe('CodeGen git repository (git over loopback HTTP)', () => {
  let server: GitServer;
  let tokenServer: GitServer;
  let cacheRoot: string;
  let count = 0;
  const unique = (label: string) => `${label}-${++count}-${randomBytes(3).toString('hex')}`;

  /** A fresh cache directory and settings for a repository on the basic-auth server. */
  function settingsFor(repo: string, extra: Record<string, string> = {}): RepositorySettings {
    return repositorySettings({ url: server.url(repo), username: USER, password: PASSWORD, ...extra });
  }
  function open(
    settings: RepositorySettings,
    opts: { policy?: EgressPolicy; timeoutMs?: number; cacheDir?: string } = {},
  ) {
    return new GitRepository(settings, {
      cacheDir: opts.cacheDir ?? join(cacheRoot, unique('cache')),
      policy: opts.policy ?? loopbackPolicy(),
      timeoutMs: opts.timeoutMs,
    });
  }
  async function emptyRepo(): Promise<{ name: string; repo: GitRepository }> {
    const name = `${unique('scripts')}.git`;
    await server.createRepo(name);
    return { name, repo: open(settingsFor(name)) };
  }

  beforeAll(async () => {
    server = await startGitServer({ username: USER, password: PASSWORD });
    tokenServer = await startGitServer({ username: 'x-access-token', password: TOKEN });
    cacheRoot = await mkdtemp(join(tmpdir(), 'tapyard-codegen-git-'));
  });
  afterAll(async () => {
    await server.close();
    await tokenServer.close();
    await rm(cacheRoot, { recursive: true, force: true });
  });

  it('has no head in an empty repository, and a first commit creates the branch', async () => {
    const { name, repo } = await emptyRepo();
    await expect(repo.head()).resolves.toBeNull();
    const sha = await repo.commit(SCRIPT, 'print("v1")\n', 'CodeGen: sales', null);
    expect(sha).toMatch(/^[0-9a-f]{40}$/);
    expect(await server.headOf(name, 'main')).toBe(sha);
    await expect(repo.head()).resolves.toBe(sha);
    await expect(repo.read(SCRIPT, sha)).resolves.toBe('print("v1")\n');
    await expect(repo.read('pipelines/other/data-quality.py', sha)).resolves.toBeNull();
  });

  it('keeps each version readable at its own commit', async () => {
    const { repo } = await emptyRepo();
    const first = await repo.commit(SCRIPT, 'v1', 'first', null);
    const second = await repo.commit(SCRIPT, 'v2', 'second', first);
    expect(second).not.toBe(first);
    await expect(repo.read(SCRIPT, first)).resolves.toBe('v1');
    await expect(repo.read(SCRIPT, second)).resolves.toBe('v2');
    // The same content again is not an empty commit: the head is the answer.
    await expect(repo.commit(SCRIPT, 'v2', 'again', second)).resolves.toBe(second);
  });

  it('reads a commit made by another cache (another worker) after fetching it', async () => {
    const { name, repo } = await emptyRepo();
    const sha = await repo.commit(SCRIPT, 'from worker a', 'a', null);
    const other = open(settingsFor(name));
    await expect(other.read(SCRIPT, sha)).resolves.toBe('from worker a');
    await expect(other.read(SCRIPT, 'f'.repeat(40))).rejects.toBeInstanceOf(RepositoryCommitNotFoundError);
  });

  it('takes paths from the repository root: the caller joins the path prefix', async () => {
    const { name } = await emptyRepo();
    const settings = settingsFor(name, { pathPrefix: 'team-a' });
    const prefixed = open(settings);
    const sha = await prefixed.commit(`${settings.pathPrefix}${SCRIPT}`, 'prefixed', 'prefixed', null);
    await expect(prefixed.read(`team-a/${SCRIPT}`, sha)).resolves.toBe('prefixed');
    await expect(prefixed.read(SCRIPT, sha)).resolves.toBeNull();
  });

  it('reports a file as changed only once someone edits it on the remote', async () => {
    const { name, repo } = await emptyRepo();
    const sha = await repo.commit(SCRIPT, 'ours', 'ours', null);
    await expect(repo.changed(SCRIPT, sha)).resolves.toEqual({ headSha: sha, changed: false });
    await expect(repo.changed('pipelines/none/data-quality.py', sha)).resolves.toEqual({
      headSha: sha,
      changed: false,
    });
    const other = await server.pushFile(name, 'main', 'README.md', 'unrelated', 'docs');
    await expect(repo.changed(SCRIPT, sha)).resolves.toEqual({ headSha: other, changed: false });
    const edit = await server.pushFile(name, 'main', SCRIPT, 'theirs', 'human edit');
    await expect(repo.changed(SCRIPT, sha)).resolves.toEqual({ headSha: edit, changed: true });
  });

  it('refuses to overwrite a file edited since the recorded commit, leaving the remote alone', async () => {
    const { name, repo } = await emptyRepo();
    const base = await repo.commit(SCRIPT, 'ours', 'ours', null);
    const edit = await server.pushFile(name, 'main', SCRIPT, 'theirs', 'human edit');
    const err = await rejectionOf(repo.commit(SCRIPT, 'ours v2', 'ours v2', base), RepositoryConflictError);
    expect(err.status).toBe(409);
    expect(err.message).toContain(SCRIPT);
    expect(await server.headOf(name, 'main')).toBe(edit);
    // Without a recorded commit the caller means to overwrite.
    const forced = await repo.commit(SCRIPT, 'ours v2', 'overwrite', null);
    await expect(repo.read(SCRIPT, forced)).resolves.toBe('ours v2');
  });

  it('commits on top of a remote edit to another file', async () => {
    const { name, repo } = await emptyRepo();
    const base = await repo.commit(SCRIPT, 'ours', 'ours', null);
    const other = await server.pushFile(name, 'main', 'pipelines/b/data-quality.py', 'theirs', 'human');
    const sha = await repo.commit(SCRIPT, 'ours v2', 'ours v2', base);
    expect(await server.headOf(name, 'main')).toBe(sha);
    await expect(repo.read('pipelines/b/data-quality.py', sha)).resolves.toBe('theirs');
    await expect(repo.read(SCRIPT, sha)).resolves.toBe('ours v2');
    await expect(repo.changed(SCRIPT, other)).resolves.toEqual({ headSha: sha, changed: true });
  });

  it.each(['push-advertisement', 'push'] as const)(
    'retries a push that lost a race (commit landing before the %s), on the new head',
    async (stage) => {
      const { name, repo } = await emptyRepo();
      const base = await repo.commit(SCRIPT, 'ours', 'ours', null);
      let raced = '';
      server.beforeNext(stage, async () => {
        raced = await server.pushFile(name, 'main', 'other.txt', 'concurrent', 'concurrent commit');
      });
      const sha = await repo.commit(SCRIPT, 'ours v2', 'ours v2', base);
      expect(raced).toMatch(/^[0-9a-f]{40}$/);
      expect(await server.headOf(name, 'main')).toBe(sha);
      await expect(repo.read('other.txt', sha)).resolves.toBe('concurrent');
      await expect(repo.read(SCRIPT, sha)).resolves.toBe('ours v2');
    },
  );

  it('re-checks the file on the retry: a racing edit of the same file is a conflict', async () => {
    const { name, repo } = await emptyRepo();
    const base = await repo.commit(SCRIPT, 'ours', 'ours', null);
    let raced = '';
    server.beforeNext('push-advertisement', async () => {
      raced = await server.pushFile(name, 'main', SCRIPT, 'theirs', 'concurrent edit');
    });
    await expect(repo.commit(SCRIPT, 'ours v2', 'ours v2', base)).rejects.toBeInstanceOf(
      RepositoryConflictError,
    );
    expect(await server.headOf(name, 'main')).toBe(raced);
  });

  it('serialises operations on one cache and survives two caches committing at once', async () => {
    const { name, repo } = await emptyRepo();
    const cacheDir = join(cacheRoot, unique('shared'));
    const a = open(settingsFor(name), { cacheDir });
    const b = open(settingsFor(name), { cacheDir });
    await Promise.all([
      a.commit('a.py', 'a', 'a', null),
      b.commit('b.py', 'b', 'b', null),
      a.commit('c.py', 'c', 'c', null),
    ]);
    const other = open(settingsFor(name));
    await Promise.all([repo.commit('d.py', 'd', 'd', null), other.commit('e.py', 'e', 'e', null)]);
    const head = await server.headOf(name, 'main');
    expect(head).not.toBeNull();
    for (const file of ['a', 'b', 'c', 'd', 'e'])
      await expect(repo.read(`${file}.py`, head ?? '')).resolves.toBe(file);
  });

  it('keys the cache by remote and branch', async () => {
    const name = `${unique('branches')}.git`;
    await server.createRepo(name, { initialFiles: { 'x.py': 'on main' } });
    await server.pushFile(name, 'dev', 'x.py', 'on dev', 'dev branch');
    const cacheDir = join(cacheRoot, unique('keyed'));
    const main = open(settingsFor(name), { cacheDir });
    const dev = open(settingsFor(name, { branch: 'dev' }), { cacheDir });
    const [mainHead, devHead] = await Promise.all([main.head(), dev.head()]);
    await expect(main.read('x.py', mainHead ?? '')).resolves.toBe('on main');
    await expect(dev.read('x.py', devHead ?? '')).resolves.toBe('on dev');
    expect((await readdir(cacheDir)).filter((d) => /^[0-9a-f]{64}$/.test(d))).toHaveLength(2);
  });

  it('bounds the file size both ways', async () => {
    const { name, repo } = await emptyRepo();
    const big = await server.pushFile(name, 'main', SCRIPT, 'x'.repeat(1024 * 1024 + 1), 'big');
    const err = await rejectionOf(repo.read(SCRIPT, big), RepositoryFileTooLargeError);
    expect(err.status).toBe(422);
    await expect(repo.commit('big.py', 'y'.repeat(1024 * 1024 + 1), 'big', null)).rejects.toBeInstanceOf(
      RepositoryFileTooLargeError,
    );
    await expect(repo.read('pipelines', big)).resolves.toBeNull();
  });

  it('refuses paths that leave the prefix or name git internals, before any request', async () => {
    const { repo } = await emptyRepo();
    const before = server.requests;
    for (const path of [
      '../x.py',
      'a/../../x.py',
      '/etc/passwd',
      'a\nb',
      'a\0b',
      '.git/config',
      'a//b',
      '',
    ]) {
      await expect(repo.commit(path, 'x', 'x', null)).rejects.toBeInstanceOf(ValidationError);
      await expect(repo.changed(path, 'a'.repeat(40))).rejects.toBeInstanceOf(ValidationError);
    }
    await expect(repo.read(SCRIPT, 'HEAD')).rejects.toBeInstanceOf(ValidationError);
    await expect(repo.commit(SCRIPT, 'x', 'x', '--upload-pack=touch')).rejects.toBeInstanceOf(
      ValidationError,
    );
    expect(server.requests).toBe(before);
  });

  it('authenticates with a token as x-access-token', async () => {
    const name = `${unique('token')}.git`;
    await tokenServer.createRepo(name, { initialFiles: { 'seed.py': 'seed' } });
    const repo = open(repositorySettings({ url: tokenServer.url(name), token: TOKEN }));
    const head = await repo.head();
    await expect(repo.read('seed.py', head ?? '')).resolves.toBe('seed');
    const sha = await repo.commit(SCRIPT, 'by token', 'by token', head);
    expect(await tokenServer.headOf(name, 'main')).toBe(sha);

    const wrong = 'ghp_Wr0ngToken999';
    const refused = open(repositorySettings({ url: tokenServer.url(name), token: wrong }));
    const err = await rejectionOf(refused.head(), RepositoryUnavailableError);
    expect(err.message).toContain('authentication failed');
    expect(err.message).not.toContain(wrong);
  });

  it('reports a wrong password without revealing it', async () => {
    const { name } = await emptyRepo();
    const wrong = 'not-the-Pa55word';
    const repo = open(repositorySettings({ url: server.url(name), username: USER, password: wrong }));
    const err = await rejectionOf(repo.commit(SCRIPT, 'x', 'x', null), RepositoryUnavailableError);
    expect(err.status).toBe(502);
    expect(err.message).toContain(`127.0.0.1:${new URL(server.url(name)).port}`);
    expect(err.message).toContain('authentication failed');
    for (const secret of [wrong, Buffer.from(`${USER}:${wrong}`).toString('base64'), 'Authorization']) {
      expect(err.message).not.toContain(secret);
    }
  });

  it('refuses a loopback remote unless the operator allowed it', async () => {
    const { name } = await emptyRepo();
    const before = server.requests;
    const repo = open(settingsFor(name), { policy: new EgressPolicy() });
    const err = await rejectionOf(repo.head(), RepositoryUnavailableError);
    expect(err.message).toContain('127.0.0.1');
    expect(err.message).toContain('refused by the egress policy');
    expect(server.requests).toBe(before);
    await expect(open(settingsFor(name), { policy: loopbackPolicy() }).head()).resolves.toBeNull();
  });

  it('connects to the address the policy vetted, not to a second lookup of the name', async () => {
    const { name } = await emptyRepo();
    // Only the policy's resolver knows this name: git reaches the server only through the pinned address.
    const policy = new EgressPolicy(
      { endpoints: [], hosts: [{ host: 'git.codegen.test' }], ranges: [] },
      () => Promise.resolve([{ address: '127.0.0.1', family: 4 }]),
      'CODE_REPOSITORY_ALLOW',
    );
    const url = server.url(name).replace('127.0.0.1', 'git.codegen.test');
    const repo = open(repositorySettings({ url, username: USER, password: PASSWORD }), { policy });
    const sha = await repo.commit(SCRIPT, 'pinned', 'pinned', null);
    expect(await server.headOf(name, 'main')).toBe(sha);
  });

  it('names the cause when the remote is missing, refuses connections or hangs', async () => {
    const missing = open(settingsFor('no-such-repo.git'));
    await expect(missing.head()).rejects.toThrow(/not found/);

    const port = await closedPort();
    const closed = open(repositorySettings({ url: `http://127.0.0.1:${port}/r.git` }));
    await expect(closed.head()).rejects.toThrow(/connection was refused/);

    const hole = await blackhole();
    try {
      const hung = open(repositorySettings({ url: `http://127.0.0.1:${hole.port}/r.git`, token: TOKEN }), {
        timeoutMs: 1500,
      });
      const err = await rejectionOf(hung.head(), RepositoryUnavailableError);
      expect(err.message).toMatch(/timed out/);
      expect(err.message).not.toContain(TOKEN);
    } finally {
      await hole.close();
    }
  });

  it('round-trips any text exactly (property)', async () => {
    const { repo } = await emptyRepo();
    const text = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 200 }),
      fc.constantFrom('', '\n', '\r\n', '\0', ' trailing \n\n', '# é 中文 🚀\r\n\tx = 1\n'),
      fc.array(fc.string({ unit: 'grapheme', maxLength: 20 }), { maxLength: 8 }).map((l) => l.join('\n')),
    );
    let base: string | null = null;
    await fc.assert(
      fc.asyncProperty(text, async (content) => {
        base = await repo.commit(SCRIPT, content, 'property', base);
        expect(await repo.read(SCRIPT, base)).toBe(content);
      }),
      { numRuns: 15 },
    );
  });
});

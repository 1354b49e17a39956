import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Which request of a push a test puts its concurrent edit before. */
export type PushStage = 'push-advertisement' | 'push';

export interface GitServer {
  url(repo: string): string;
  createRepo(repo: string, opts?: { initialFiles?: Record<string, string>; branch?: string }): Promise<void>;
  /** A human's edit made directly on the server; returns the new head of `branch`. */
  pushFile(repo: string, branch: string, path: string, content: string, message: string): Promise<string>;
  headOf(repo: string, branch: string): Promise<string | null>;
  /** HTTP requests served so far (refused ones included). */
  readonly requests: number;
  /**
   * Runs `action` once, just before serving the next request of that stage of a push: the ref
   * advertisement (the client then sees the branch moved) or the pack upload (the server then finds
   * the branch moved): a concurrent commit landing inside the client's operation.
   */
  beforeNext(stage: PushStage, action: () => Promise<void>): void;
  close(): Promise<void>;
}

/**
 * A git smart-HTTP server on 127.0.0.1 for tests: Node's http server running the real
 * `git http-backend` as a CGI per request, with pushes enabled and optional HTTP Basic auth.
 */
export async function startGitServer(options: { username?: string; password?: string }): Promise<GitServer> {
  const base = await mkdtemp(join(tmpdir(), 'tapyard-git-server-'));
  const root = join(base, 'repos');
  const home = join(base, 'home');
  await mkdir(root);
  await mkdir(home);
  const hooks = new Map<PushStage, () => Promise<void>>();
  let requests = 0;

  const authorized = (req: IncomingMessage): boolean => {
    if (options.username === undefined && options.password === undefined) return true;
    const expected = `Basic ${Buffer.from(`${options.username ?? ''}:${options.password ?? ''}`).toString('base64')}`;
    return req.headers.authorization === expected;
  };

  const server = createServer((req, res) => {
    requests += 1;
    if (!authorized(req)) {
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"', 'Content-Type': 'text/plain' });
      res.end('authentication required\n');
      return;
    }
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const stage: PushStage | null =
      url.pathname.endsWith('/info/refs') && url.searchParams.get('service') === 'git-receive-pack'
        ? 'push-advertisement'
        : url.pathname.endsWith('/git-receive-pack')
          ? 'push'
          : null;
    const hook = stage ? hooks.get(stage) : undefined;
    if (stage && hook) hooks.delete(stage);
    // Paused until the hook ran, so the body is not lost meanwhile.
    req.pause();
    void (hook ? hook() : Promise.resolve()).then(
      () => cgi(req, res, url),
      () => {
        res.writeHead(500).end();
      },
    );
  });

  const cgi = (req: IncomingMessage, res: ServerResponse, url: URL): void => {
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: home,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: '1',
      GIT_CONFIG_COUNT: '1',
      GIT_CONFIG_KEY_0: 'http.receivepack',
      GIT_CONFIG_VALUE_0: 'true',
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.replace(/^\?/, ''),
      REQUEST_METHOD: req.method ?? 'GET',
      CONTENT_TYPE: req.headers['content-type'] ?? '',
      REMOTE_USER: options.username ?? '',
      REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
    };
    if (req.headers['content-length'] !== undefined) env.CONTENT_LENGTH = req.headers['content-length'];
    if (req.headers['content-encoding'] !== undefined)
      env.HTTP_CONTENT_ENCODING = req.headers['content-encoding'];
    const protocol = req.headers['git-protocol'];
    if (typeof protocol === 'string') env.GIT_PROTOCOL = protocol;

    const child = spawn('git', ['http-backend'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    child.stderr.resume();
    child.stdin.on('error', () => undefined);
    req.pipe(child.stdin);
    req.resume();
    let head = Buffer.alloc(0);
    let headersDone = false;
    child.stdout.on('data', (chunk: Buffer) => {
      if (headersDone) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      const altEnd = head.indexOf('\n\n');
      const [at, skip] = end >= 0 && (altEnd < 0 || end < altEnd) ? [end, 4] : [altEnd, 2];
      if (at < 0) return;
      headersDone = true;
      let status = 200;
      for (const line of head.subarray(0, at).toString('latin1').split(/\r?\n/)) {
        const colon = line.indexOf(':');
        if (colon < 0) continue;
        const name = line.slice(0, colon).trim();
        const value = line.slice(colon + 1).trim();
        if (name.toLowerCase() === 'status') status = Number(value.split(' ')[0]);
        else res.setHeader(name, value);
      }
      res.statusCode = status;
      res.write(head.subarray(at + skip));
    });
    child.on('close', () => {
      if (!headersDone) res.writeHead(500);
      res.end();
    });
    child.on('error', () => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  };

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const gitDir = (repo: string): string => join(root, repo);
  const gitEnv = (repo: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({
    PATH: process.env.PATH,
    HOME: home,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_DIR: gitDir(repo),
    GIT_AUTHOR_NAME: 'A Human',
    GIT_AUTHOR_EMAIL: 'human@example.test',
    GIT_COMMITTER_NAME: 'A Human',
    GIT_COMMITTER_EMAIL: 'human@example.test',
    ...extra,
  });

  const headOf = async (repo: string, branch: string): Promise<string | null> => {
    const out = await git(['rev-parse', '--verify', '-q', `refs/heads/${branch}`], gitEnv(repo), '', true);
    return out === '' ? null : out;
  };

  /** Commits files onto `branch` with plumbing, straight into the bare repository. */
  const commitFiles = async (
    repo: string,
    branch: string,
    files: Record<string, string>,
    message: string,
  ): Promise<string> => {
    const parent = await headOf(repo, branch);
    const index = join(base, `index-${randomBytes(6).toString('hex')}`);
    const env = gitEnv(repo, { GIT_INDEX_FILE: index });
    try {
      await git(parent ? ['read-tree', parent] : ['read-tree', '--empty'], env);
      for (const [path, content] of Object.entries(files)) {
        const blob = await git(['hash-object', '-w', '--stdin'], env, content);
        await git(['update-index', '--add', '--cacheinfo', `100644,${blob},${path}`], env);
      }
      const tree = await git(['write-tree'], env);
      const sha = await git(['commit-tree', tree, ...(parent ? ['-p', parent] : [])], env, `${message}\n`);
      // Compare-and-swap on the ref, as receive-pack does.
      await git(['update-ref', `refs/heads/${branch}`, sha, parent ?? ''], env);
      return sha;
    } finally {
      await rm(index, { force: true });
    }
  };

  return {
    url: (repo) => `http://127.0.0.1:${port}/${repo}`,
    async createRepo(repo, opts = {}) {
      const branch = opts.branch ?? 'main';
      await git(['init', '--bare', '--quiet', '-b', branch, gitDir(repo)], gitEnv(repo));
      if (opts.initialFiles) await commitFiles(repo, branch, opts.initialFiles, 'initial files');
    },
    pushFile: (repo, branch, path, content, message) =>
      commitFiles(repo, branch, { [path]: content }, message),
    headOf,
    get requests() {
      return requests;
    },
    beforeNext(stage, action) {
      hooks.set(stage, action);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(base, { recursive: true, force: true });
    },
  };
}

/** Runs git; stdout trimmed. `quiet`: a failure is an empty answer (rev-parse -q of a missing ref). */
function git(args: string[], env: NodeJS.ProcessEnv, input = '', quiet = false): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.once('error', reject);
    child.once('close', (code) => {
      if (code === 0 || quiet) resolve(code === 0 ? Buffer.concat(out).toString('utf8').trim() : '');
      else reject(new Error(`git ${args[0]} failed: ${Buffer.concat(err).toString('utf8').trim()}`));
    });
    // git may exit without reading its input; its exit code tells what happened.
    child.stdin.on('error', () => undefined);
    child.stdin.end(input);
  });
}

import { createHash, randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { ValidationError } from '@tapyard/core';
import { EgressPolicy } from '@tapyard/egress';
import { withDirectoryLock } from './directory-lock';
import {
  RepositoryCommitNotFoundError,
  RepositoryConflictError,
  RepositoryFileTooLargeError,
} from './git-errors';
import { GitResult, runGit } from './git-process';
import { GitTransport } from './git-transport';
import { RepositorySettings, relativePathProblem } from './repository-settings';

export interface GitRepositoryOptions {
  /** Parent of the local caches; each (url, branch) gets a bare repository of its own below it. */
  cacheDir: string;
  policy: EgressPolicy;
  /** Bound of each git command. */
  timeoutMs?: number;
}

/** Scripts are small; a bigger file is not one we wrote, and reading it whole is not worth it. */
export const MAX_FILE_BYTES = 1024 * 1024;
const MAX_MESSAGE_CHARS = 64 * 1024;
/** Where the cache keeps the last fetched head of the branch. */
const HEAD_REF = 'refs/tapyard/head';
const SHA = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
const PUSH_ATTEMPTS = 2;

interface Entry {
  mode: string;
  type: string;
  id: string;
  size: number;
}

/**
 * A branch of a remote git repository (http or https) holding CodeGen scripts, driven through the git
 * CLI over a local bare cache. Paths are from the repository root: callers join the settings'
 * pathPrefix themselves, since the joined path is what they record.
 */
export class GitRepository {
  private readonly dir: string;
  private readonly timeoutMs: number;
  private readonly transport: GitTransport;
  private initialized: Promise<void> | null = null;

  constructor(
    private readonly settings: RepositorySettings,
    private readonly options: GitRepositoryOptions,
  ) {
    this.timeoutMs = options.timeoutMs ?? 30000;
    // Keyed by remote and branch, so two secrets never share (or poison) one cache.
    const key = createHash('sha256').update(`${settings.url}\n${settings.branch}`).digest('hex');
    this.dir = join(resolve(options.cacheDir), key);
    const home = join(resolve(options.cacheDir), '.home');
    this.transport = new GitTransport(
      settings,
      options.policy,
      home,
      this.timeoutMs,
      resolve(options.cacheDir),
    );
  }

  /** The branch head on the remote, or null when the branch does not exist there yet. */
  async head(): Promise<string | null> {
    return this.locked(() => this.fetch());
  }

  /** The text of `path` at commit `sha`, or null when the path is not a file in that commit. */
  async read(path: string, sha: string): Promise<string | null> {
    const full = checkedPath(path);
    checkSha('sha', sha);
    return this.locked(async () => {
      if (!(await this.hasCommit(sha))) {
        // Made elsewhere (another worker) since our last fetch: the branch brings it.
        await this.fetch();
        if (!(await this.hasCommit(sha))) throw new RepositoryCommitNotFoundError(sha);
      }
      const entry = await this.entryAt(sha, full);
      if (entry === null || entry.type !== 'blob') return null;
      if (entry.size > MAX_FILE_BYTES)
        throw new RepositoryFileTooLargeError(full, entry.size, MAX_FILE_BYTES);
      return this.local(['cat-file', 'blob', entry.id], { maxStdout: MAX_FILE_BYTES });
    });
  }

  /** Whether `path` differs between the branch head and commit `since` (both absent: unchanged). */
  async changed(path: string, since: string): Promise<{ headSha: string | null; changed: boolean }> {
    const full = checkedPath(path);
    checkSha('since', since);
    return this.locked(async () => {
      const headSha = await this.fetch();
      const now = headSha === null ? null : await this.entryAt(headSha, full);
      // A recorded commit no longer on the branch (history rewritten): nothing proves the file is the same.
      if (!(await this.hasCommit(since))) return { headSha, changed: true };
      const then = await this.entryAt(since, full);
      return { headSha, changed: (now?.id ?? null) !== (then?.id ?? null) };
    });
  }

  /**
   * Commits `content` at `path` on top of the remote head and pushes it; returns the new commit (or the
   * head itself when the file already has that content). With `expectedBase`, refuses when the file at
   * the head is not the one at that commit: someone edited it since. A push that lost a race with
   * another commit is retried once on the new head, with the same check.
   */
  async commit(path: string, content: string, message: string, expectedBase: string | null): Promise<string> {
    const full = checkedPath(path);
    if (expectedBase !== null) checkSha('expectedBase', expectedBase);
    if (message.trim() === '' || message.length > MAX_MESSAGE_CHARS || message.includes('\0')) {
      throw new ValidationError('the commit message must be non-blank text of at most 64 KiB', [
        { field: 'message', problem: 'is blank, too long or contains NUL' },
      ]);
    }
    const size = Buffer.byteLength(content, 'utf8');
    if (size > MAX_FILE_BYTES) throw new RepositoryFileTooLargeError(full, size, MAX_FILE_BYTES);
    return this.locked(async () => {
      const blob = (
        await this.local(['hash-object', '-w', '--no-filters', '--stdin'], { input: content })
      ).trim();
      for (let attempt = 1; ; attempt += 1) {
        const head = await this.fetch();
        const current = head === null ? null : await this.entryAt(head, full);
        if (expectedBase !== null) await this.checkUnchanged(full, current, expectedBase);
        if (current?.type === 'tree') {
          throw new ValidationError(`${full} is a directory in the code repository`, [
            { field: 'path', problem: 'names a directory' },
          ]);
        }
        if (head !== null && current?.id === blob) return head;
        const sha = await this.commitTree(
          head,
          full,
          blob,
          current?.mode === '100755' ? '100755' : '100644',
          message,
        );
        if (await this.push(sha)) {
          await this.local(['update-ref', HEAD_REF, sha]);
          return sha;
        }
        if (attempt >= PUSH_ATTEMPTS) {
          throw new RepositoryConflictError(full, 'could not be committed because the branch kept moving');
        }
      }
    });
  }

  private async checkUnchanged(full: string, current: Entry | null, expectedBase: string): Promise<void> {
    if (!(await this.hasCommit(expectedBase))) {
      throw new RepositoryConflictError(
        full,
        `cannot be compared: commit ${expectedBase} is not on the branch`,
      );
    }
    const base = await this.entryAt(expectedBase, full);
    if ((current?.id ?? null) !== (base?.id ?? null)) {
      throw new RepositoryConflictError(full, `was changed since commit ${expectedBase.slice(0, 12)}`);
    }
  }

  /** Writes the new tree through a private index file, so the cache's own index is never involved. */
  private async commitTree(
    head: string | null,
    full: string,
    blob: string,
    mode: string,
    message: string,
  ): Promise<string> {
    const index = join(this.dir, `tapyard-index-${randomBytes(8).toString('hex')}`);
    const env = { GIT_INDEX_FILE: index };
    try {
      await this.local(head === null ? ['read-tree', '--empty'] : ['read-tree', head], { env });
      const update = await this.run(['update-index', '--add', '--cacheinfo', `${mode},${blob},${full}`], {
        env,
      });
      if (update.code !== 0) {
        throw new ValidationError(
          `${full} cannot be written: a file or directory in the repository is in the way`,
          [{ field: 'path', problem: 'conflicts with an existing file or directory' }],
        );
      }
      const tree = (await this.local(['write-tree'], { env })).trim();
      const parents = head === null ? [] : ['-p', head];
      const text = message.endsWith('\n') ? message : `${message}\n`;
      return (await this.local(['commit-tree', tree, ...parents], { input: text })).trim();
    } finally {
      await rm(index, { force: true });
      await rm(`${index}.lock`, { force: true });
    }
  }

  /** Fetches the branch into the cache; null when the remote has no such branch (an empty repository). */
  private async fetch(): Promise<string | null> {
    const refspec = `+refs/heads/${this.settings.branch}:${HEAD_REF}`;
    const result = await this.run(
      [
        ...(await this.transport.networkConfig()),
        'fetch',
        '--no-tags',
        '--no-write-fetch-head',
        '--no-recurse-submodules',
        this.settings.url,
        refspec,
      ],
      { network: true },
    );
    if (result.code !== 0) {
      if (!result.timedOut && /couldn't find remote ref/.test(result.stderr)) {
        await this.local(['update-ref', '-d', HEAD_REF]);
        return null;
      }
      throw this.transport.failure(result, 'fetch');
    }
    return (await this.local(['rev-parse', '--verify', `${HEAD_REF}^{commit}`])).trim();
  }

  /** True when pushed, false when the remote moved (a concurrent commit); other failures throw. */
  private async push(sha: string): Promise<boolean> {
    const result = await this.run(
      [
        ...(await this.transport.networkConfig()),
        'push',
        '--porcelain',
        '--no-verify',
        this.settings.url,
        `${sha}:refs/heads/${this.settings.branch}`,
      ],
      { network: true },
    );
    if (result.code === 0) return true;
    const said = `${result.stdout.toString('utf8')}\n${result.stderr}`;
    const lostRace =
      /\[rejected\]|non-fast-forward|fetch first/.test(said) ||
      /\[remote rejected\].*(cannot lock ref|failed to update ref|incorrect old value|stale info)/.test(said);
    if (lostRace && !result.timedOut) return false;
    throw this.transport.failure(result, 'push');
  }

  private async entryAt(commit: string, full: string): Promise<Entry | null> {
    const out = await this.local(['ls-tree', '-z', '-l', '--full-tree', commit, '--', full]);
    for (const record of out.split('\0')) {
      const tab = record.indexOf('\t');
      if (tab < 0 || record.slice(tab + 1) !== full) continue;
      const [mode, type, id, size] = record.slice(0, tab).trim().split(/\s+/);
      return { mode, type, id, size: size === '-' ? 0 : Number(size) };
    }
    return null;
  }

  private async hasCommit(sha: string): Promise<boolean> {
    return (await this.run(['cat-file', '-e', `${sha}^{commit}`])).code === 0;
  }

  private init(): Promise<void> {
    this.initialized ??= (async () => {
      // Private: the cache holds the scripts, and git refuses repositories owned by someone else.
      await mkdir(join(resolve(this.options.cacheDir), '.home'), { recursive: true, mode: 0o700 });
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      // No templates: no sample hooks, nothing but the repository itself.
      await this.local(['init', '--bare', '--quiet', '--template=']);
    })().catch((err: unknown) => {
      this.initialized = null;
      throw err;
    });
    return this.initialized;
  }

  private locked<T>(task: () => Promise<T>): Promise<T> {
    return withDirectoryLock(this.dir, async () => {
      await this.init();
      return task();
    });
  }

  /** A command on the cache alone; its failure is the cache's (disk, corruption), reported as such. */
  private async local(args: readonly string[], opts: RunOptions = {}): Promise<string> {
    const result = await this.run(args, opts);
    if (result.code !== 0) throw this.transport.failure(result, `git ${args[0]} on the local cache`);
    return result.stdout.toString('utf8');
  }

  private run(args: readonly string[], opts: RunOptions = {}): Promise<GitResult> {
    return runGit({
      args: ['-c', 'core.hooksPath=/dev/null', '-c', 'gc.autoDetach=false', `--git-dir=${this.dir}`, ...args],
      env: { ...this.transport.env(opts.network ?? false), ...opts.env },
      input: opts.input,
      timeoutMs: this.timeoutMs,
      maxStdout: opts.maxStdout ?? 4 * MAX_FILE_BYTES,
    });
  }
}

interface RunOptions {
  network?: boolean;
  input?: string;
  env?: NodeJS.ProcessEnv;
  maxStdout?: number;
}

function checkedPath(path: string): string {
  const problem = relativePathProblem(path);
  if (problem) throw new ValidationError(`the script path ${problem}`, [{ field: 'path', problem }]);
  return path;
}

function checkSha(field: string, sha: string): void {
  if (!SHA.test(sha)) {
    throw new ValidationError(`${field} is not a full commit id`, [
      { field, problem: 'is not a full commit id' },
    ]);
  }
}

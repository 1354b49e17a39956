import { ValidationError } from '@tapyard/core';

/** Where CodeGen scripts are stored when the secret `code-repository` exists. */
export interface RepositorySettings {
  /** The remote, normalised (WHATWG serialisation) so git sees the host the egress check saw. */
  url: string;
  branch: string;
  /** Empty, or a relative directory ending in `/`; callers join it before the paths they store. */
  pathPrefix: string;
  auth: { username: string; password: string } | null;
  authorName: string;
  authorEmail: string;
}

const FIELD_LIMIT = 2048;
// Control characters anywhere are refused: git config, HTTP headers and commit headers are line-based.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/** Parses the fields of the secret `code-repository`; a bad field is a ValidationError naming it. */
export function repositorySettings(fields: Readonly<Record<string, string>>): RepositorySettings {
  const value = (name: string): string | undefined => {
    const raw = fields[name];
    if (raw === undefined || raw === '') return undefined;
    if (typeof raw !== 'string' || raw.length > FIELD_LIMIT) invalid(name, 'is not a short text');
    return raw;
  };
  return {
    url: parseUrl(value('url')),
    branch: parseBranch(value('branch') ?? 'main'),
    pathPrefix: parsePathPrefix(value('pathPrefix') ?? ''),
    auth: parseAuth(value('token'), value('username'), value('password')),
    authorName: parseIdentity('authorName', value('authorName') ?? 'Tapyard'),
    authorEmail: parseIdentity('authorEmail', value('authorEmail') ?? 'tapyard@localhost'),
  };
}

function invalid(field: string, problem: string): never {
  throw new ValidationError(`secret 'code-repository': ${field} ${problem}`, [{ field, problem }]);
}

function parseUrl(raw: string | undefined): string {
  if (raw === undefined) invalid('url', 'is required');
  // The WHATWG parser silently drops tabs and newlines and reads `\` as `/`; git and curl do not,
  // so such a URL could name a different host to them than the one the egress policy checks.
  if (CONTROL.test(raw) || /[\s\\]/.test(raw))
    invalid('url', 'must not contain spaces, control characters or backslashes');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return invalid('url', 'is not a URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') invalid('url', 'must be an http or https URL');
  // Credentials in the URL would reach the command line, `ps` and error texts; the secret has fields for them.
  if (url.username !== '' || url.password !== '') {
    invalid('url', 'must not contain credentials (use the token, or username and password fields)');
  }
  if (url.hostname === '') invalid('url', 'has no host');
  if (url.hash !== '') invalid('url', 'must not have a #fragment');
  return url.href;
}

/** The rules of `git check-ref-format` for a branch name. */
function parseBranch(branch: string): string {
  const problem = branchProblem(branch);
  if (problem) invalid('branch', problem);
  return branch;
}

function branchProblem(b: string): string | null {
  if (CONTROL.test(b) || /[\s~^:?*[\\]/.test(b)) {
    return 'must not contain spaces, control characters or any of ~ ^ : ? * [ \\';
  }
  if (b.startsWith('-')) return "must not start with '-'";
  if (b.includes('..') || b.includes('@{') || b === '@') return "must not contain '..' or '@{' or be '@'";
  if (b.startsWith('/') || b.endsWith('/') || b.includes('//')) return 'must not have empty path components';
  if (b.endsWith('.') || b.split('/').some((c) => c.startsWith('.') || c.endsWith('.lock'))) {
    return "must not end with '.', and no component may start with '.' or end with '.lock'";
  }
  return null;
}

function parsePathPrefix(raw: string): string {
  if (raw === '') return '';
  const prefix = raw.endsWith('/') ? raw : `${raw}/`;
  const problem = relativePathProblem(prefix.slice(0, -1));
  if (problem) invalid('pathPrefix', problem);
  return prefix;
}

/**
 * Why `path` is not a plain relative path inside a repository, or null: it may not escape the
 * repository root, name git's own directory, or carry characters git's index refuses.
 */
export function relativePathProblem(path: string): string | null {
  if (path === '') return 'must not be empty';
  if (CONTROL.test(path)) return 'must not contain control characters';
  if (path.startsWith('/')) return "must be relative (no leading '/')";
  const segments = path.split('/');
  if (segments.some((s) => s === '..' || s === '.' || s === '')) {
    return "must not contain '..', '.' or empty segments";
  }
  if (segments.some((s) => s.toLowerCase() === '.git')) return "must not contain a '.git' segment";
  return null;
}

function parseAuth(
  token: string | undefined,
  username: string | undefined,
  password: string | undefined,
): RepositorySettings['auth'] {
  if (token !== undefined) {
    if (CONTROL.test(token)) invalid('token', 'must not contain control characters');
    // GitHub's convention; other hosts accept any user name with a token as the password.
    return { username: 'x-access-token', password: token };
  }
  if (username === undefined && password === undefined) return null;
  if (username === undefined) invalid('username', 'is required with password');
  if (password === undefined) invalid('password', 'is required with username');
  // HTTP Basic cannot carry a ':' in the user name.
  if (CONTROL.test(username) || username.includes(':')) {
    invalid('username', "must not contain ':' or control characters");
  }
  if (CONTROL.test(password)) invalid('password', 'must not contain control characters');
  return { username, password };
}

function parseIdentity(field: string, value: string): string {
  // git writes these into the commit header between `<` `>`; it would mangle or refuse such characters.
  if (CONTROL.test(value) || /[<>]/.test(value) || value.trim() === '') {
    invalid(field, "must be non-blank, without '<', '>' or control characters");
  }
  return value;
}

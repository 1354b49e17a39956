import { isIP } from 'node:net';
import { EgressPolicy, EgressRefused } from '@tapyard/egress';
import { RepositoryUnavailableError } from './git-errors';
import { GitResult } from './git-process';
import { RepositorySettings } from './repository-settings';

/**
 * Everything that makes a git command safe to point at a caller-configured remote: a clean
 * environment (no user or system config, no proxies, no prompts), the egress check pinned into curl,
 * credentials in the environment only, and failures turned into sentences without secrets.
 */
export class GitTransport {
  readonly host: string;
  private readonly hostname: string;
  private readonly port: number;
  private readonly secrets: string[];
  private readonly authHeader: string | null;

  constructor(
    private readonly settings: RepositorySettings,
    private readonly policy: EgressPolicy,
    private readonly home: string,
    private readonly timeoutMs: number,
    /** The local cache's path: an internal detail, named `<cache>` in messages. */
    private readonly cacheDir: string,
  ) {
    const url = new URL(settings.url);
    this.host = url.host;
    this.hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
    this.port = url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
    const auth = settings.auth;
    const basic = auth ? Buffer.from(`${auth.username}:${auth.password}`, 'utf8').toString('base64') : null;
    this.authHeader = basic ? `Authorization: Basic ${basic}` : null;
    this.secrets = auth && basic ? [auth.password, encodeURIComponent(auth.password), basic] : [];
  }

  /** The environment of every git command; nothing is inherited that could redirect or prompt. */
  env(network: boolean): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      HOME: this.home,
      XDG_CONFIG_HOME: this.home,
      // Failures are classified by git's English messages.
      LC_ALL: 'C',
      LANG: 'C',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_TERMINAL_PROMPT: '0',
      GIT_ASKPASS: '/bin/true',
      GIT_LITERAL_PATHSPECS: '1',
      GIT_AUTHOR_NAME: this.settings.authorName,
      GIT_AUTHOR_EMAIL: this.settings.authorEmail,
      GIT_COMMITTER_NAME: this.settings.authorName,
      GIT_COMMITTER_EMAIL: this.settings.authorEmail,
    };
    if (!network) return env;
    env.GIT_HTTP_LOW_SPEED_LIMIT = '1';
    env.GIT_HTTP_LOW_SPEED_TIME = String(Math.max(1, Math.floor(this.timeoutMs / 2000)));
    if (this.authHeader) {
      // The environment, unlike argv, is not readable by other users (`ps`), and git never echoes it.
      env.GIT_CONFIG_COUNT = '1';
      env.GIT_CONFIG_KEY_0 = 'http.extraHeader';
      env.GIT_CONFIG_VALUE_0 = this.authHeader;
    }
    return env;
  }

  /**
   * The `-c` options of a command that talks to the remote, after the egress policy allowed the
   * host; curl is pinned to the address the policy vetted so a second lookup cannot rebind it.
   */
  async networkConfig(): Promise<string[]> {
    let address: string;
    try {
      address = (await this.policy.check(this.hostname, this.port)).address;
    } catch (err) {
      if (err instanceof EgressRefused)
        throw this.unavailable(err.message.replace(/^connection to \S+ /, ''));
      throw err;
    }
    const pin =
      isIP(this.hostname) === 0
        ? [
            '-c',
            `http.curloptResolve=${this.hostname}:${this.port}:${isIP(address) === 6 ? `[${address}]` : address}`,
          ]
        : [];
    return [
      ...pin,
      '-c',
      'http.followRedirects=false',
      '-c',
      'http.proxy=',
      '-c',
      'protocol.allow=never',
      '-c',
      'protocol.http.allow=always',
      '-c',
      'protocol.https.allow=always',
      '-c',
      'credential.helper=',
      '-c',
      'core.askPass=',
      '-c',
      'transfer.fsckObjects=true',
    ];
  }

  /** A failed network command as an error naming the host and the cause. */
  failure(result: GitResult, verb: string): RepositoryUnavailableError {
    return this.unavailable(this.reason(result, verb));
  }

  unavailable(reason: string): RepositoryUnavailableError {
    return new RepositoryUnavailableError(this.host, this.scrub(reason));
  }

  /** Removes every form of the credentials from a text we are about to show. */
  scrub(text: string): string {
    let out = text
      .replace(/Authorization:[^\n]*/gi, 'Authorization: ***')
      .split(this.cacheDir)
      .join('<cache>');
    for (const secret of this.secrets) if (secret !== '') out = out.split(secret).join('***');
    return out;
  }

  private reason(result: GitResult, verb: string): string {
    if (result.spawnError !== null) return `git could not be started (${result.spawnError})`;
    if (result.timedOut) return `${verb} timed out after ${this.timeoutMs} ms`;
    if (result.overflow) return `${verb} answered more output than expected`;
    return classify(result.stderr, verb);
  }
}

const CAUSES: readonly [RegExp, string][] = [
  [/Authentication failed|could not read (Username|Password)|returned error: 401/, 'authentication failed'],
  [/returned error: 403|Permission to .* denied/, 'access denied (HTTP 403)'],
  [/repository '.*' not found|returned error: 404/, 'the repository was not found'],
  [/Could not resolve host/, 'the host name does not resolve'],
  [/Failed to connect|Connection refused|Couldn't connect/, 'the connection was refused'],
  [/Operation too slow|timed out|Timeout was reached/i, 'timed out'],
  [/returned error: 3\d\d|redirect/i, 'the server answered with a redirect, which is not followed'],
  [/SSL|certificate|TLS/, 'the TLS handshake failed'],
  [/returned error: 5\d\d/, 'the server answered with an error (HTTP 5xx)'],
];

/** A short cause from git's stderr; stderr itself is never passed on (it may quote the server). */
function classify(stderr: string, verb: string): string {
  for (const [pattern, cause] of CAUSES) if (pattern.test(stderr)) return cause;
  const refused = /\[remote rejected\][^(\n]*\(([^)\n]{1,120})\)/.exec(stderr);
  if (refused) return `the push was refused (${refused[1]})`;
  const fatal = stderr
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => /^(fatal|error):/.test(line))
    .pop();
  return fatal
    ? `${verb} failed (${fatal.replace(/^(fatal|error):\s*/, '').slice(0, 160)})`
    : `${verb} failed`;
}

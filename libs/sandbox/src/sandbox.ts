import { spawn, SpawnOptions } from 'node:child_process';
import { isAbsolute, join, posix, relative } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { cgroupHost, RunCgroup } from './cgroups';
import { bwrapArgs, SANDBOX_EGRESS_PORT, SANDBOX_HARNESS, SANDBOX_SCRIPT_DIR, SANDBOX_VENV } from './bwrap';
import { probeBwrap } from './bwrap-probe';
import { sandboxEnv } from './environment';
import { SandboxError } from './errors';
import { DEFAULT_HARNESS_PATH } from './harness-path';
import { DEFAULT_LIMITS, resolveLimits, RunLimits } from './limits';
import { pythonLayout } from './python-layout';
import { IsolationMode, Launch, RecordsCallback, Released, RunHandle } from './run-handle';
import { userNamespaceFilter } from './seccomp';
import { DEFAULT_UID_LOCK_DIR, DEFAULT_UID_RANGE, UidLease, UidPool, UidRange } from './uid-pool';

/**
 * require: runs need bwrap (namespaces, private network) and fail closed, saying why, without it;
 * off: the operator chose to run scripts with limits only, on the host's filesystem and network.
 */
export type BwrapMode = 'off' | 'require';

export interface PythonSandboxOptions {
  harnessPath?: string;
  bwrap?: BwrapMode;
  bwrapPath?: string;
  /** Defaults for every run; each request may override single limits. */
  limits?: Partial<RunLimits>;
  /**
   * When the platform is root, each run gets a host uid (and gid) of its own from this range, so
   * RLIMIT_NPROC, which the kernel counts per real uid, is that run's budget alone. Reserve the
   * range for the sandbox: no user, file owner or subordinate (container) range may use it.
   */
  uids?: UidRange;
  /** Where platform processes on this host record which uids their runs hold (root only). */
  uidLockDir?: string;
}

/**
 * How one run's budget is kept apart from the others' (see PythonSandbox.separation): `cgroup` also
 * means a uid per run.
 */
export type RunSeparation = 'cgroup' | 'uid' | 'user-namespace' | 'shared-uid';

export interface RunRequest {
  /**
   * The tap script; see writeScript() for a file the sandbox user can read. With scriptFromStdin only
   * its file name counts: the name the script runs under (tracebacks show it).
   */
  scriptPath: string;
  /**
   * Starts the sandbox before its script is known: the harness confines itself and waits for the
   * script on stdin (stdin: true; BatchSession.prestart frames it). No script file is read or mounted.
   */
  scriptFromStdin?: boolean;
  /** The venv's interpreter, e.g. from VenvCache.ensure(); must live inside venvDir. */
  python: string;
  venvDir: string;
  /** The script's whole environment, besides PATH, HOME, LANG and a few Python switches. */
  env?: Readonly<Record<string, string>>;
  limits?: Partial<RunLimits>;
  /** Values masked as *** in logs and error messages (values shorter than 3 are ignored). */
  secrets?: readonly string[];
  /** Consume records through this callback instead of iterating the handle. */
  onRecords?: RecordsCallback;
  /**
   * Structured rows: every record must be an object (else error kind not_row), and the harness
   * reports each record key when it first appears (RecordChunk.keys).
   */
  rows?: boolean;
  /**
   * The egress proxy's Unix socket (EgressProxy.socketPath). Sandboxed scripts have a network of their
   * own with nothing in it; with this socket HTTP(S)_PROXY points at a relay to it, without it the
   * script has no network at all. Ignored with bwrap off (the operator chose the host's network).
   */
  egressSocket?: string;
  /**
   * The script's stdin is a pipe the caller writes to (RunHandle.input()), else /dev/null. A script
   * that reads stdin until its end keeps running until the caller ends the pipe.
   */
  stdin?: boolean;
  /**
   * Every record is sent the moment it is yielded, instead of in batches: for request/response use,
   * where the caller waits for a record before it writes the next request (see BatchSession).
   */
  flushEach?: boolean;
  /**
   * Incremental taps: the tap's last committed state. A fetch() with a `state` parameter gets it (as
   * a dict it may change) and the outcome reports the dict as it was once every record was written
   * (RunOutcome.state); a fetch() without one runs as before.
   */
  state?: Record<string, unknown>;
}

/** Python flags: ignore PYTHON* variables, no site (the harness loads it after dropping), unbuffered logs. */
const PYTHON_FLAGS = ['-E', '-S', '-u', '-B'];

export class PythonSandbox {
  private readonly harnessPath: string;
  private readonly bwrapMode: BwrapMode;
  private readonly bwrapPath: string;
  private readonly limits: RunLimits;
  private readonly uids: UidPool;
  private readonly isRoot = process.getuid?.() === 0;

  constructor(options: PythonSandboxOptions = {}) {
    this.harnessPath = options.harnessPath ?? DEFAULT_HARNESS_PATH;
    this.bwrapMode = options.bwrap ?? 'require';
    this.bwrapPath = options.bwrapPath ?? '/usr/bin/bwrap';
    this.limits = resolveLimits(DEFAULT_LIMITS, options.limits);
    this.uids = new UidPool(options.uids ?? DEFAULT_UID_RANGE, options.uidLockDir ?? DEFAULT_UID_LOCK_DIR);
  }

  /**
   * As root, a uid per run, and with bwrap cgroups of its own where the host allows them;
   * otherwise bwrap's user namespace per run (the kernel counts RLIMIT_NPROC per user namespace),
   * and with bwrap off every run shares the platform's uid.
   */
  async separation(): Promise<{ kind: RunSeparation; detail: string }> {
    if (this.isRoot) {
      const uids = `${this.uids.range.first}-${this.uids.range.last}`;
      const host = this.bwrapMode === 'off' ? null : await cgroupHost();
      if (host) {
        return { kind: 'cgroup', detail: `each run has a uid (${uids}) and a ${host.describe()} of its own` };
      }
      return { kind: 'uid', detail: `each run has a uid of its own (${uids}); no usable cgroups` };
    }
    if ((await this.isolation()) === 'bwrap') {
      return { kind: 'user-namespace', detail: 'each run has a user namespace of its own' };
    }
    return { kind: 'shared-uid', detail: "runs share the platform's uid and its process limit" };
  }

  /** The isolation runs get; the bwrap probe runs once per process and binary. */
  async isolation(): Promise<IsolationMode> {
    if (this.bwrapMode === 'off') return 'none';
    const problem = await probeBwrap(this.bwrapPath, this.isRoot);
    if (!problem) return 'bwrap';
    throw new SandboxError(
      'spawn_failed',
      `the sandbox requires bwrap, which is not usable here: ${problem} ` +
        '(install bubblewrap, or set TAP_SANDBOX=off to run scripts without isolation)',
    );
  }

  /** Starts a run at once; problems with the request surface as the outcome's error. */
  run(request: RunRequest): RunHandle {
    let limits: RunLimits;
    try {
      limits = resolveLimits(this.limits, request.limits);
    } catch (err) {
      limits = this.limits;
      return new RunHandle(limits, [], Promise.reject(startError(err)));
    }
    const secrets = request.secrets ?? [];
    return new RunHandle(limits, secrets, this.launch(request, limits), request.onRecords);
  }

  private async launch(request: RunRequest, limits: RunLimits): Promise<Launch> {
    for (const path of [request.scriptPath, request.python, request.venvDir]) {
      if (!isAbsolute(path))
        throw new SandboxError('spawn_failed', `the sandbox needs absolute paths (got "${path}")`);
    }
    const isolation = await this.isolation();
    const args = [
      ...harnessLimits(limits),
      ...(request.rows ? ['--rows', '1'] : []),
      ...(request.flushEach ? ['--flush', '1'] : []),
      ...(request.state ? ['--state', '1'] : []),
      ...(request.scriptFromStdin ? ['--script-stdin', '1'] : []),
    ];
    if (!this.isRoot) {
      return isolation === 'none'
        ? this.launchDirect(request, args, null)
        : this.launchBwrap(request, limits, args, null, null);
    }
    const lease = await this.uids.acquire();
    let cgroup: RunCgroup | null = null;
    try {
      cgroup = isolation === 'bwrap' ? await runCgroup(lease, limits) : null;
      const launch =
        isolation === 'none'
          ? this.launchDirect(request, args, lease)
          : await this.launchBwrap(request, limits, args, lease, cgroup);
      // Without a pid namespace, or when bwrap was killed before its namespace was torn down,
      // processes of the run may still be alive: they are swept before anything goes back.
      const release = (signal: NodeJS.Signals | null) =>
        giveBack(lease, cgroup, isolation === 'none' || signal !== null);
      return { ...launch, release };
    } catch (err) {
      await giveBack(lease, cgroup, true);
      throw err;
    }
  }

  /**
   * No namespaces: the interpreter runs as the sandbox user (when we are root), so the
   * interpreter, venv, harness and script must be readable by that user.
   */
  private launchDirect(request: RunRequest, harnessArgs: string[], lease: UidLease | null): Launch {
    const env = { ...sandboxEnv(request.env ?? {}, join(request.venvDir, 'bin')), ...stateEnv(request) };
    const args = [...PYTHON_FLAGS, this.harnessPath, ...harnessArgs, '--', request.scriptPath];
    const options: SpawnOptions = {
      env,
      cwd: '/tmp',
      detached: true,
      stdio: [stdinMode(request), 'pipe', 'pipe', 'pipe'],
    };
    if (lease) Object.assign(options, { uid: lease.uid, gid: lease.uid });
    return { child: spawn(request.python, args, options), isolation: 'none' };
  }

  private async launchBwrap(
    request: RunRequest,
    limits: RunLimits,
    harnessArgs: string[],
    lease: UidLease | null,
    cgroup: RunCgroup | null,
  ): Promise<Launch> {
    const inVenv = relative(request.venvDir, request.python);
    if (inVenv.startsWith('..') || isAbsolute(inVenv)) {
      throw new SandboxError('spawn_failed', 'the sandbox needs the interpreter to live inside venvDir');
    }
    const layout = await pythonLayout(request.python);
    const scriptName = posix.basename(request.scriptPath);
    const options = bwrapArgs({
      privileged: this.isRoot,
      layout,
      venvDir: request.venvDir,
      scriptPath: request.scriptPath,
      scriptFromStdin: request.scriptFromStdin,
      harnessPath: this.harnessPath,
      tmpBytes: limits.maxFileBytes,
      env: {
        ...sandboxEnv(request.env ?? {}, posix.join(SANDBOX_VENV, 'bin')),
        ...proxyEnv(request),
        ...stateEnv(request),
      },
      egressSocket: request.egressSocket,
    });
    // As root the harness drops to the run's uid itself, before any venv or script code runs.
    const drop = lease ? ['--uid', String(lease.uid), '--gid', String(lease.uid)] : [];
    const command = [
      posix.join(SANDBOX_VENV, inVenv),
      ...PYTHON_FLAGS,
      SANDBOX_HARNESS,
      ...drop,
      ...harnessArgs,
      ...(request.egressSocket ? ['--egress-port', String(SANDBOX_EGRESS_PORT)] : []),
      '--',
      posix.join(SANDBOX_SCRIPT_DIR, scriptName),
    ];
    const filter = userNamespaceFilter();
    const extra = filter ? ['--seccomp', '5'] : [];
    // Options travel through fd 4 and the filter through fd 5: pipes, not the command line.
    const argv = ['--args', '4', ...extra, '--', ...command];
    // The shell joins the run's cgroups and becomes bwrap: nothing of the run ever runs outside them.
    const [file, fileArgs] = cgroup
      ? [
          '/bin/sh',
          [
            '-c',
            JOIN_CGROUPS,
            'sh',
            String(cgroup.procsFiles.length),
            ...cgroup.procsFiles,
            this.bwrapPath,
            ...argv,
          ],
        ]
      : [this.bwrapPath, argv];
    const child = spawn(file, fileArgs, {
      env: {},
      detached: true,
      // bwrap hands its stdin to the sandboxed process as is.
      stdio: [stdinMode(request), 'pipe', 'pipe', 'pipe', 'pipe', 'pipe'],
    });
    const pipes: readonly (Readable | Writable | null | undefined)[] = child.stdio;
    feed(pipes[4], Buffer.from(options.map((o) => `${o}\0`).join('')));
    feed(pipes[5], filter ?? Buffer.alloc(0));
    return { child, isolation: 'bwrap' };
  }
}

/** `sh -c` script: `N procs-file... command...`; writes its pid into each file, then execs the command. */
const JOIN_CGROUPS =
  'n=$1; shift; while [ "$n" -gt 0 ]; do ' +
  'echo $$ > "$1" || { echo "bwrap: could not join the run\'s cgroup" >&2; exit 125; }; ' +
  'shift; n=$((n - 1)); done; exec "$@"';

/** Cgroups of the run's own, named after its uid (unique on the host), where the host allows them. */
async function runCgroup(lease: UidLease, limits: RunLimits): Promise<RunCgroup | null> {
  const host = await cgroupHost();
  if (!host) return null;
  try {
    return await host.create(`run-${lease.uid}`, limits);
  } catch (err) {
    throw new SandboxError(
      'spawn_failed',
      `the sandbox could not make the run's cgroup: ${(err as Error).message}`,
    );
  }
}

/**
 * Takes the run's cgroups down and gives its uid back, in that order (the cgroups are named after
 * the uid). Whatever cannot be given back stays held: a uid is never shared by two runs.
 */
async function giveBack(lease: UidLease, cgroup: RunCgroup | null, sweep: boolean): Promise<Released> {
  try {
    if (sweep && !(await lease.sweep())) return { memoryExceeded: false };
    const memoryExceeded = (await cgroup?.memoryExceeded()) ?? false;
    if (cgroup && !(await cgroup.remove())) return { memoryExceeded };
    await lease.release();
    return { memoryExceeded };
  } catch {
    return { memoryExceeded: false };
  }
}

/** The kernel limits the harness sets on itself before it loads anything of the script. */
function harnessLimits(limits: RunLimits): string[] {
  const { memoryBytes, cpuSeconds, maxProcesses, maxFileBytes } = limits;
  return ['--memory', memoryBytes, '--cpu', cpuSeconds, '--nproc', maxProcesses, '--fsize', maxFileBytes].map(
    String,
  );
}

function stdinMode(request: RunRequest): 'pipe' | 'ignore' {
  return request.stdin ? 'pipe' : 'ignore';
}

/** Python's requests, httpx and urllib read these; the relay answers on loopback inside the sandbox. */
function proxyEnv(request: RunRequest): Record<string, string> {
  if (!request.egressSocket) return {};
  const url = `http://127.0.0.1:${SANDBOX_EGRESS_PORT}`;
  return { HTTP_PROXY: url, HTTPS_PROXY: url, http_proxy: url, https_proxy: url };
}

/** The harness takes the state out of the environment before the script loads (see harness.py). */
function stateEnv(request: RunRequest): Record<string, string> {
  return request.state ? { TAPYARD_TAP_STATE: JSON.stringify(request.state) } : {};
}

function feed(pipe: Readable | Writable | null | undefined, data: Buffer): void {
  if (!(pipe instanceof Writable)) return;
  pipe.on('error', () => undefined); // bwrap died early: its exit tells the story.
  pipe.end(data);
}

function startError(err: unknown): SandboxError {
  return err instanceof SandboxError
    ? err
    : new SandboxError('spawn_failed', `the sandbox could not start: ${(err as Error).message}`);
}

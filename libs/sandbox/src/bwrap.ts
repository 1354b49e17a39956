import { lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { basename, dirname, join, posix } from 'node:path';
import { PythonLayout } from './python-layout';

/** Fixed paths inside the sandbox: the script sees these, never the platform's layout. */
export const SANDBOX_VENV = '/venv';
export const SANDBOX_SCRIPT_DIR = '/tap';
export const SANDBOX_HARNESS = '/sandbox/harness.py';
/** The modules harness.py imports, beside it (sys.path[0] is the harness's directory). */
export const HARNESS_PACKAGE = '_tapyard_harness';
/** Where the platform's egress proxy socket appears; the harness relays 127.0.0.1:EGRESS_PORT to it. */
export const SANDBOX_EGRESS_SOCKET = '/run/tapyard/egress.sock';
export const SANDBOX_EGRESS_PORT = 3128;

const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc'];

/**
 * How bwrap gets its privileges. As root it runs without a user namespace (inside one, the
 * sandbox user would map to host root, which RLIMIT_NPROC never limits and which owns every
 * root file), keeps only CAP_SETUID/CAP_SETGID, and the harness drops to the sandbox user.
 * As any other user it runs unprivileged inside a new user namespace. Either way the script gets a
 * network namespace of its own with nothing but loopback: the host's services are out of reach, and
 * the only way out is the egress proxy socket (see EgressProxy).
 */
export function namespaceArgs(privileged: boolean): string[] {
  const common = ['--die-with-parent', '--new-session', '--hostname', 'tapyard-sandbox'];
  if (privileged) {
    return [
      ...common,
      '--unshare-ipc',
      '--unshare-pid',
      '--unshare-uts',
      '--unshare-net',
      '--unshare-cgroup-try',
      '--cap-drop',
      'ALL',
      '--cap-add',
      'CAP_SETUID',
      '--cap-add',
      'CAP_SETGID',
    ];
  }
  return [...common, '--unshare-all', '--unshare-user', '--disable-userns'];
}

export interface BwrapPlan {
  privileged: boolean;
  layout: PythonLayout;
  venvDir: string;
  scriptPath: string;
  /** The script comes on stdin (RunRequest.scriptFromStdin): nothing is mounted at scriptPath. */
  scriptFromStdin?: boolean;
  harnessPath: string;
  tmpBytes: number;
  env: Readonly<Record<string, string>>;
  /** The egress proxy's Unix socket on the host; without it the script has no way out at all. */
  egressSocket?: string;
}

/** Options for `bwrap --args FD`: kept off the command line, where /proc/1/cmdline would show them. */
export function bwrapArgs(plan: BwrapPlan): string[] {
  const mounts = new MountPlan();
  mounts.system();
  for (const dir of pythonDirs(plan.layout, plan.venvDir)) mounts.bindReadOnly(dir, dir);
  mounts.bindReadOnly(plan.venvDir, SANDBOX_VENV);
  if (!plan.scriptFromStdin)
    mounts.bindReadOnly(plan.scriptPath, posix.join(SANDBOX_SCRIPT_DIR, basename(plan.scriptPath)));
  mounts.bindReadOnly(plan.harnessPath, SANDBOX_HARNESS);
  mounts.bindReadOnly(
    join(dirname(plan.harnessPath), HARNESS_PACKAGE),
    posix.join(posix.dirname(SANDBOX_HARNESS), HARNESS_PACKAGE),
  );
  if (plan.egressSocket) mounts.bind(plan.egressSocket, SANDBOX_EGRESS_SOCKET);
  const env = Object.entries(plan.env).flatMap(([k, v]) => ['--setenv', k, v]);
  return [
    ...namespaceArgs(plan.privileged),
    ...mounts.args,
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    // A private, size-capped /tmp: tmpfs pages are not counted by RLIMIT_AS.
    '--perms',
    '1777',
    '--size',
    String(plan.tmpBytes),
    '--tmpfs',
    '/tmp',
    '--chdir',
    '/tmp',
    '--clearenv',
    ...env,
  ];
}

/** The interpreter's own trees; the venv is mounted separately at SANDBOX_VENV. */
function pythonDirs(layout: PythonLayout, venvDir: string): string[] {
  const dirs = [layout.basePrefix, layout.baseExecPrefix, dirname(layout.executable)];
  return [...new Set(dirs)].filter((d) => d !== venvDir && !d.startsWith(`${venvDir}/`));
}

/**
 * Read-only binds plus the directories leading to them. Privileged bwrap creates missing
 * parents with mode 0700 (/root, for a pyenv interpreter), which the sandbox user cannot
 * traverse, so parents are created explicitly with 0755.
 */
export class MountPlan {
  readonly args: string[] = [];
  private readonly mounted: string[] = [];
  private readonly created = new Set<string>(['/']);

  system(): void {
    for (const dir of SYSTEM_DIRS) {
      const stat = lstatSafe(dir);
      if (stat?.isSymbolicLink()) {
        this.args.push('--symlink', readlinkSync(dir), dir);
        this.created.add(dir);
      } else if (stat?.isDirectory()) {
        this.bindReadOnly(dir, dir);
      }
    }
    // Name resolution must keep working when resolv.conf points outside /etc (systemd-resolved).
    const resolv = realpathSafe('/etc/resolv.conf');
    if (resolv && !this.covered(resolv)) this.bindReadOnly(resolv, resolv);
  }

  bindReadOnly(source: string, dest: string): void {
    this.mount('--ro-bind', source, dest);
  }

  /** Writable: connecting to a Unix socket needs write permission on it. */
  bind(source: string, dest: string): void {
    this.mount('--bind', source, dest);
  }

  private mount(option: string, source: string, dest: string): void {
    if (this.covered(dest)) return;
    this.parents(dest);
    this.args.push(option, source, dest);
    this.mounted.push(dest);
  }

  private covered(path: string): boolean {
    return this.mounted.some((m) => path === m || path.startsWith(`${m}/`));
  }

  private parents(dest: string): void {
    const missing: string[] = [];
    for (let dir = posix.dirname(dest); !this.created.has(dir); dir = posix.dirname(dir))
      missing.unshift(dir);
    for (const dir of missing) {
      this.args.push('--perms', '0755', '--dir', dir);
      this.created.add(dir);
    }
  }
}

function lstatSafe(path: string): ReturnType<typeof lstatSync> | null {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

function realpathSafe(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
}

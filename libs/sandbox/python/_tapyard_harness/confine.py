"""What the harness does to itself before any script or site code runs: drop to the sandbox user,
set the kernel limits, and close every inherited file descriptor but stdio and the record channel."""

import os

from . import OUT_FD
from .failures import Failure


def drop_privileges(uid, gid):
    """Run as uid/gid from here on; the kernel then clears every capability."""
    if os.getuid() == uid and os.geteuid() == uid:
        return
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid):
        raise Failure("internal", "could not drop privileges")


def set_limits(opts):
    import resource

    def limit(res, soft, hard):
        _, cur_hard = resource.getrlimit(res)
        if cur_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, cur_hard), min(hard, cur_hard)
        resource.setrlimit(res, (soft, hard))

    limit(resource.RLIMIT_CORE, 0, 0)
    if "memory" in opts:
        limit(resource.RLIMIT_AS, opts["memory"], opts["memory"])
    if "cpu" in opts:
        # SIGXCPU at the soft limit; SIGKILL a second later if the script ignores it.
        limit(resource.RLIMIT_CPU, opts["cpu"], opts["cpu"] + 1)
    if "nproc" in opts:
        limit(resource.RLIMIT_NPROC, opts["nproc"], opts["nproc"])
    if "fsize" in opts:
        limit(resource.RLIMIT_FSIZE, opts["fsize"], opts["fsize"])


def close_other_fds():
    """Nothing but stdio and the record channel reaches the script (e.g. bwrap's args pipe)."""
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    top = soft if 0 < soft < 1 << 20 else 1 << 16
    os.closerange(OUT_FD + 1, top)
    # Subprocesses of the script must not write into the record channel.
    os.set_inheritable(OUT_FD, False)

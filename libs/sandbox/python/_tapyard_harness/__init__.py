"""The tap harness's parts, one job per module; harness.py is the entry point that ties them together.

The package's name is one no script's own imports can take by accident: its modules sit in sys.modules
while the script runs.
"""

import os

# The record channel (see harness.py for its protocol).
OUT_FD = 3
# The harness's numeric options (--memory, --nproc, --rows...), set once by harness.py from its arguments.
LIMITS = {}
# The harness's own process: a process the script forks must never report or stream as if it were it.
PID = os.getpid()

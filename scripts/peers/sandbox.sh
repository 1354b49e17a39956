# shellcheck shell=bash
# ---------------------------------------------------------------- tap sandbox (not a server)
# Sourced by scripts/services.
# Tap scripts run in Python 3 virtual environments, inside bubblewrap when it is installed.
sandbox_start() {
  command -v bwrap >/dev/null || apt_install bubblewrap
  # TAP_PYTHON defaults to Debian's interpreter; venvs are made with its venv module and filled by its pip.
  [ -x /usr/bin/python3 ] || apt_install python3
  /usr/bin/python3 -c 'import venv' 2>/dev/null || apt_install python3-venv
  /usr/bin/python3 -m pip --version >/dev/null 2>&1 || apt_install python3-pip
}

sandbox_stop() { :; }

sandbox_status() {
  if command -v bwrap >/dev/null; then echo "sandbox: $(bwrap --version), $(/usr/bin/python3 --version 2>&1)"
  else echo "sandbox: bubblewrap missing (taps run with limits only)"; fi
}

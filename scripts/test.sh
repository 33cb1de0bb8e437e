#!/usr/bin/env bash
# Lint, then the whole pytest suite, in parallel: on PostgreSQL + Redis when they are
# reachable (DATABASE_URL / REDIS_URL, or the local defaults), else on the embedded default.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}

reachable() {  # host port
  "$VENV/bin/python" - "$1" "$2" <<'PY'
import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=1).close()
except OSError:
    sys.exit(1)
PY
}

if [ -z "${DATABASE_URL:-}" ] && [ -z "${ARENA_EMBEDDED:-}" ] && reachable 127.0.0.1 5432; then
  export DATABASE_URL="postgres://postgres@127.0.0.1:5432/arena"
fi
if [ -z "${REDIS_URL:-}" ] && [ -z "${ARENA_EMBEDDED:-}" ] && reachable 127.0.0.1 6379; then
  export REDIS_URL="redis://127.0.0.1:6379/1"
fi
export SECRET_KEY="${SECRET_KEY:-insecure-test-key-not-for-production}"
echo "test database: ${DATABASE_URL:-embedded SQLite}; redis: ${REDIS_URL:-none (in-memory layer, thread runner)}"

"$VENV/bin/ruff" check .
"$VENV/bin/ruff" format --check .
# The expert's compiled kernels, once, before the workers and their sites start: each
# would otherwise compile them itself, and a browser test waiting on a sweep times out.
"$VENV/bin/python" -m negotiation.policies.expert.warm
# Two xdist workers (PYTEST_WORKERS=0 runs serially), each on its own test database, Redis
# DB and data folder (tests/conftest.py). loadgroup keeps the tests that share a costly
# module fixture or measure load on one worker (their xdist_group marks; tests/conftest.py
# hands pytest 9 the group tags pytest-xdist 3.8 writes where pytest 9 no longer reads).
exec "$VENV/bin/python" -m pytest -n "${PYTEST_WORKERS:-2}" --dist loadgroup --durations=25 "$@"

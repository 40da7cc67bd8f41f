#!/usr/bin/env bash
# The fast tests, to run while you work: the unit tests at the top of tests/, lib, engines, services, api, ws, ssr,
# scripts, and the store on DuckDB. Left out, for `npm test`: tests/agent and tests/commands (real programs under
# `tapscope run`), the ClickHouse store tests, tests/cluster, tests/build (the compiled binary), tests/docs (the docs'
# commands under `tapscope run`), tests/ui (DOM, own process), tests/e2e (Chromium), tests/bench, and the tests that
# start the real server as a child process (tests/support/server-process.ts: its memory, freezes and crashes).
# Extra arguments go to `bun test` (e.g. `-t "shown once"`).
set -uo pipefail
cd "$(dirname "$0")/.."
BUN=./node_modules/.bin/bun
# The pages' tests read the built assets.
"$BUN" scripts/build-client.ts || exit 1
mapfile -t files < <(
  {
    find tests -maxdepth 1 \( -name '*.test.ts' -o -name '*.test.tsx' \)
    find tests/lib tests/engines tests/services tests/api tests/ws tests/ssr tests/scripts tests/store \
      \( -name '*.test.ts' -o -name '*.test.tsx' \) ! -path 'tests/store/clickhouse*' ! -name 'insert-encoding.test.ts'
  } | xargs grep -L 'support/server-process' | sort
)
exec "$BUN" test --timeout 30000 "${files[@]/#/./}" "$@"

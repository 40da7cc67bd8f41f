#!/usr/bin/env bash
# The whole test suite: server/agent/store tests, then UI (DOM) tests in their own process, then browser tests, then
# the benchmarks' smoke runs.
# Prints the failing tests' names again at the end, then one closing line "tests: N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
BUN=./node_modules/.bin/bun
pass=0; fail=0; status=0
failed=$(mktemp)
run() {
  local out
  out=$(mktemp)
  "$@" 2>&1 | tee "$out"
  local rc=${PIPESTATUS[0]}
  local p f
  p=$(grep -Eo '^ *[0-9]+ pass$' "$out" | tail -1 | grep -Eo '[0-9]+' || echo 0)
  f=$(grep -Eo '^ *[0-9]+ fail$' "$out" | tail -1 | grep -Eo '[0-9]+' || echo 0)
  pass=$((pass + p)); fail=$((fail + f))
  # bun prints each file's name, then "(fail) describe > name" per failing test: repeated at the end, with the file,
  # where a log's tail shows them (bun's own summary of the failures, after the last file, is left out).
  awk '/^[0-9]+ tests? failed:$/ { exit } /^[^ (].*\.(ts|tsx):$/ { file = $0 } /^\(fail\) / { print file " " $0 }' "$out" >>"$failed"
  # An error outside any test (an unhandled rejection, a file that does not load) fails the run with no "(fail)" line:
  # its first lines and the run's exit status are repeated too.
  awk '/^# Unhandled error/ { grab = 12; print "  " $0 } grab > 0 && /(Error|error):|^ +at / { print "    " $0; grab-- }' "$out" >>"$failed"
  if [ "$rc" -ne 0 ]; then
    status=1
    echo "exit status ${rc}: ${*: -3}" >>"$failed"
  fi
  rm -f "$out"
}
# bun test ignores bunfig's [test] timeout (its default is 5 s per test): the limit is given on each line.
# The pages' tests read the built assets (the docs and the site's content are rendered into them).
"$BUN" scripts/build-client.ts || exit 1
run "$BUN" test --timeout 30000
# The inbound relay on two threads (the default where there are more than two cores, unlike CI's two): the programs'
# tests again with TAPSCOPE_RELAY_THREADS=2.
TAPSCOPE_RELAY_THREADS=2 run "$BUN" test --timeout 30000 ./tests/agent/supervisor/inbound.test.ts ./tests/agent/relay/half-close.test.ts ./tests/agent/supervisor/socket-flags.test.ts \
  ./tests/agent/relay/fuzz.test.ts ./tests/agent/redact-run.test.ts ./tests/commands/run.test.ts ./tests/agent/supervisor/outbound.test.ts \
  ./tests/agent/lifecycle/daemon.test.ts ./tests/agent/supervisor/credentials.test.ts ./tests/agent/websocket-run.test.ts \
  ./tests/agent/unanswered.test.ts
# Database calls on pooled connections find their parent request across threads (the shared parent tracker).
TAPSCOPE_RELAY_THREADS=2 run "$BUN" test --timeout 30000 ./tests/agent/db-run.test.ts
shopt -s nullglob
ui=(tests/ui/*.ui.tsx)
if [ ${#ui[@]} -gt 0 ]; then run "$BUN" test --timeout 30000 --preload ./tests/ui/dom.ts "${ui[@]/#/./}"; fi
e2e=(tests/e2e/*.e2e.ts)
if [ ${#e2e[@]} -gt 0 ]; then run "$BUN" test --timeout 120000 "${e2e[@]/#/./}"; fi
# Every benchmark's smoke run (tiny sizes, seconds each): each still runs and prints its table. Last and on their own,
# since they measure.
bench=(tests/bench/*.bench.ts)
if [ ${#bench[@]} -gt 0 ]; then run "$BUN" test --timeout 240000 "${bench[@]/#/./}"; fi
if [ -s "$failed" ]; then
  echo "failed tests and errors:"
  sed 's/^/  /' "$failed"
fi
rm -f "$failed"
echo "tests: ${pass} passed, ${fail} failed"
exit $status

#!/usr/bin/env bash
# fuzz.sh runs every fuzz target of the main module for a short, bounded
# time on top of its seed corpus (testdata/fuzz/<Target>):
#
#   bash hack/fuzz.sh                 # each target for 10 s
#   FUZZTIME=1m bash hack/fuzz.sh ./apiserver/...   # longer, some packages
#
# A failure leaves the crashing input under the package's testdata/fuzz/,
# where `go test` replays it from then on; commit it with the fix.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10s}
# Minimizing each new interesting input may otherwise take up to a minute,
# and one still being minimized when the fuzz time ends fails the run.
minimize=${FUZZMINIMIZETIME:-1s}
pkgs=("${@:-./...}")
failed=0
count=0
start=$(date +%s)
for pkg in $(go list "${pkgs[@]}"); do
  targets=$(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true)
  for t in $targets; do
    count=$((count + 1))
    if ! out=$(go test -run '^$' -fuzz "^${t}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "$pkg" 2>&1); then
      echo "FAIL $pkg $t"
      echo "$out" | tail -40
      failed=1
    else
      echo "ok   $pkg $t"
    fi
  done
done
echo "fuzz: $count targets, ${fuzztime} each, $(( $(date +%s) - start ))s"
exit $failed

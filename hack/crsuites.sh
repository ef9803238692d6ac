#!/usr/bin/env bash
# crsuites.sh runs controller-runtime's own envtest-based test packages, unchanged, twice: against
# a real kube-apiserver + etcd (envtest starts them, from KUBEBUILDER_ASSETS) and against kloop's
# embedded API server (USE_EXISTING_CLUSTER=true, KUBECONFIG of a `kloop apiserver` started here,
# a fresh one per package). It counts each package's Ginkgo specs (from Ginkgo's JSON report) and
# plain top-level Go tests (from the output) passed and failed, prints a table and keeps the names
# of what failed. A measurement tool, not CI: it takes about a quarter of an hour on 2 cores and
# needs the Go module proxy and the real binaries (hack/realk8s.sh).
#
#   bash hack/crsuites.sh                       # every package below, both servers
#   PKGS="pkg/client pkg/cache" bash hack/crsuites.sh
#   TARGETS=embedded bash hack/crsuites.sh      # one server only (real, embedded)
#
# Environment:
#   CR_VERSION          controller-runtime version (default v0.25.2)
#   PKGS                packages of its module to run (default: the envtest-based ones below)
#   TARGETS             "real embedded" (default), or one of them
#   KLOOP_REAL_K8S_DIR  directory of kube-apiserver and etcd (default: what hack/realk8s.sh prints)
#   CRSUITES_DIR        work directory (default: a new temporary one); reports in $CRSUITES_DIR/report
#   SUITE_TIMEOUT       each package's timeout (default 20m)
#   TABLE_ONLY=1        print the table of the reports in CRSUITES_DIR, run nothing
#   CONTROLPLANE_START_TIMEOUT  how long envtest waits for kube-apiserver to start (default 120s)
#   KLOOP_FLAGS         flags of `kloop apiserver` (default --disable-controllers: envtest runs
#                       kube-apiserver and etcd alone, no kube-controller-manager, so a namespace
#                       gets no default ServiceAccount or kube-root-ca.crt, and nothing collects
#                       garbage; the suites count on that)
#
# Output: per package and server, passed/total, skipped and seconds (pending specs are not counted;
# specs skipped, by Skip or a failed BeforeSuite, are). $CRSUITES_DIR/report/<target>/<pkg>.failed
# lists what failed, a spec as "<state> <container texts> <leaf text> [<node type>] (<file:line>)",
# a Go test as "failed <name> [go test]"; <pkg>.log holds the test's output.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
CR_VERSION=${CR_VERSION:-v0.25.2}
PKGS=${PKGS:-"pkg/builder pkg/cache pkg/client pkg/client/apiutil pkg/cluster pkg/controller pkg/controller/controllerutil pkg/envtest pkg/handler pkg/internal/controller pkg/internal/recorder pkg/manager pkg/manager/internal/integration pkg/metrics/filters pkg/reconcile pkg/source pkg/webhook"}
TARGETS=${TARGETS:-"real embedded"}
SUITE_TIMEOUT=${SUITE_TIMEOUT:-20m}
KLOOP_FLAGS=${KLOOP_FLAGS:---disable-controllers}
work=${CRSUITES_DIR:-$(mktemp -d -t crsuites.XXXXXX)}
mkdir -p "$work"
echo "crsuites: controller-runtime $CR_VERSION in $work" >&2

for t in $TARGETS; do
	case $t in real | embedded) ;; *) echo "crsuites: unknown target $t (real, embedded)" >&2; exit 2 ;; esac
done

if [ "${TABLE_ONLY:-}" = 1 ]; then TARGETS=""; fi

# The source, from the module proxy, as a writable copy (its tests write into testdata).
src="$work/controller-runtime"
if [ ! -d "$src" ]; then
	dir=$(go mod download -json "sigs.k8s.io/controller-runtime@$CR_VERSION" | jq -r .Dir)
	cp -r "$dir" "$src"
	chmod -R u+w "$src"
fi

# The test binaries, built once for both servers.
mkdir -p "$work/bin"
for p in ${TARGETS:+$PKGS}; do
	b="$work/bin/$(echo "$p" | tr / _).test"
	if [ ! -x "$b" ]; then
		echo "crsuites: building $p" >&2
		(cd "$src" && go test -c -o "$b" "./$p")
	fi
done
if [[ " $TARGETS " == *" embedded "* ]]; then (cd "$root" && go build -o "$work/bin/kloop" ./cmd/kloop); fi

assets=""
if [[ " $TARGETS " == *" real "* ]]; then
	real=${KLOOP_REAL_K8S_DIR:-$(bash "$root/hack/realk8s.sh")}
	assets="$work/assets"
	mkdir -p "$assets"
	ln -sf "$real/kube-apiserver" "$real/etcd" "$assets/"
	ln -sf "$(command -v kubectl)" "$assets/kubectl"
fi

kloop_pid=""
stop_kloop() {
	if [ -n "$kloop_pid" ]; then
		kill "$kloop_pid" 2>/dev/null || true
		wait "$kloop_pid" 2>/dev/null || true
		kloop_pid=""
	fi
}
trap stop_kloop EXIT

# start_kloop starts a fresh embedded server and waits for its kubeconfig.
start_kloop() {
	local kc="$1"
	rm -f "$kc"
	# shellcheck disable=SC2086 # KLOOP_FLAGS is a list of flags
	"$work/bin/kloop" apiserver --kubeconfig-out "$kc" $KLOOP_FLAGS >"$kc.out" 2>&1 &
	kloop_pid=$!
	for _ in $(seq 200); do
		if grep -q "kubeconfig written" "$kc.out" 2>/dev/null; then return 0; fi
		sleep 0.05
	done
	echo "crsuites: kloop apiserver did not start:" >&2
	cat "$kc.out" >&2
	return 1
}

# run_pkg runs one package's test binary against one target, in the package's directory (its
# tests read testdata relative to it).
run_pkg() {
	local t="$1" p="$2" name out
	name=$(echo "$p" | tr / _)
	out="$work/report/$t"
	mkdir -p "$out"
	rm -f "$out/$name.json"
	local env=(env -u KUBECONFIG -u USE_EXISTING_CLUSTER -u KUBEBUILDER_ASSETS)
	if [ "$t" = real ]; then
		# envtest's 20 s for kube-apiserver to start is too short on a loaded machine.
		env+=(KUBEBUILDER_ASSETS="$assets" KUBEBUILDER_CONTROLPLANE_START_TIMEOUT="${CONTROLPLANE_START_TIMEOUT:-120s}")
	else
		start_kloop "$out/$name.kubeconfig"
		env+=(USE_EXISTING_CLUSTER=true KUBECONFIG="$out/$name.kubeconfig")
	fi
	echo "crsuites: $t $p" >&2
	local start=$SECONDS
	(cd "$src/$p" && "${env[@]}" "$work/bin/$name.test" -test.v -test.timeout "$SUITE_TIMEOUT" \
		-ginkgo.json-report "$out/$name.json" -ginkgo.no-color -ginkgo.timeout "$SUITE_TIMEOUT") \
		>"$out/$name.log" 2>&1 || true
	echo "$((SECONDS - start))" >"$out/$name.seconds"
	stop_kloop
	# The package's plain Go tests: the top-level tests of its output but those that run Ginkgo.
	local ginkgo
	ginkgo=$(awk '/^func Test[A-Za-z0-9_]*\(/ { match($0, /Test[A-Za-z0-9_]*/); n = substr($0, RSTART, RLENGTH) }
		/RunSpecs\(/ { print n }' "$src/$p"/*_test.go | sort -u)
	grep -E '^--- (PASS|FAIL|SKIP): Test' "$out/$name.log" | awk '{ print $2, $3 }' |
		grep -vwF -f <(echo "${ginkgo:-/}") >"$out/$name.gotests" || true
	if [ -f "$out/$name.json" ]; then
		# The specs and the suite-level nodes that failed (after a failed BeforeSuite, Ginkgo runs
		# and reports no spec: counts takes the total from its pre-run count).
		jq -r '.[] | (.SpecReports // [])[] | select(.State != "passed" and .State != "skipped" and .State != "pending")
			| "\(.State) \(.ContainerHierarchyTexts // [] | join(" ")) \(.LeafNodeText) [\(.LeafNodeType)] (\(.LeafNodeLocation.FileName | split("/") | .[-1]):\(.LeafNodeLocation.LineNumber))"' \
			"$out/$name.json" >"$out/$name.failed" || echo "crsuites: $out/$name.json does not read" >&2
	fi
	awk '$1 == "FAIL:" { print "failed", $2, "[go test]" }' "$out/$name.gotests" >>"$out/$name.failed"
}

for t in $TARGETS; do
	for p in $PKGS; do
		run_pkg "$t" "$p"
	done
done

# counts prints "passed total skipped seconds" of one package on one target ("- - - s" without a
# report): its Ginkgo specs and its plain top-level Go tests. The total is every spec Ginkgo meant
# to run (not the pending ones): a spec skipped because a BeforeSuite failed (Ginkgo does not
# report it) counts as skipped and not passed.
counts() {
	local f="$work/report/$1/$2" pass total skipped
	if [ ! -f "$f.gotests" ]; then : >"$f.gotests"; fi
	if [ ! -f "$f.json" ]; then
		echo "- - - $(cat "$f.seconds" 2>/dev/null || echo -)"
		return
	fi
	read -r pass total skipped < <(jq -r '[.[] | (.SpecReports // [])[] | select(.LeafNodeType == "It")] as $s
		| ([.[].PreRunStats.SpecsThatWillRun] | add) as $total
		| "\([$s[] | select(.State == "passed")] | length) \($total) \($total - ([$s[] | select(.State != "skipped" and .State != "pending")] | length))"' "$f.json" ||
		echo 0 0 0)
	pass=$((pass + $(grep -c '^PASS:' "$f.gotests" || true)))
	total=$((total + $(wc -l <"$f.gotests")))
	skipped=$((skipped + $(grep -c '^SKIP:' "$f.gotests" || true)))
	echo "$pass $total $skipped $(cat "$f.seconds")"
}

# The table shows every target with reports in the work directory (a run of one target after a run
# of both shows both).
TARGETS=$(for t in real embedded; do if [ -d "$work/report/$t" ]; then echo "$t"; fi; done)
echo
printf '%-34s' "package"
for t in $TARGETS; do printf ' %-30s' "$t passed/total (skipped, s)"; done
echo
tp=() tt=()
for p in $PKGS; do
	name=$(echo "$p" | tr / _)
	printf '%-34s' "$p"
	i=0
	for t in $TARGETS; do
		read -r pass total skipped secs <<<"$(counts "$t" "$name")"
		printf ' %-30s' "$pass/$total ($skipped, ${secs}s)"
		if [ "$pass" != - ]; then
			tp[i]=$((${tp[i]:-0} + pass))
			tt[i]=$((${tt[i]:-0} + total))
		fi
		i=$((i + 1))
	done
	echo
done
printf '%-34s' "all"
i=0
for t in $TARGETS; do
	printf ' %-30s' "${tp[i]:-0}/${tt[i]:-0}"
	i=$((i + 1))
done
echo
echo
echo "failed specs: $work/report/<target>/<package>.failed; test output: <package>.log"

package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"kloop.dev/kloop/apiserver/apiservertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// knownDifferences lists transcripts allowed to differ, each with the reason
// the embedded server cannot match the real one. Keep it empty: a
// difference is a bug of the embedded server, fixed there.
var knownDifferences = map[string]string{}

// Compact compacts the target's history at its current revision (etcd
// compaction on the real server, Server.Compact on the embedded one).
func (tr *T) Compact() {
	tr.t.Helper()
	if err := tr.fx.env.Compact(tr.ctx); err != nil {
		tr.t.Fatalf("%s: compact: %v", tr.fx.target, err)
	}
}

// TestConformance runs every transcript on every target of
// apiservertest.Targets() and compares the normalized responses.
func TestConformance(t *testing.T) {
	run := runID()
	var mu sync.Mutex // guards results
	results := map[apiservertest.Target]map[string][]exchange{}
	subst := map[apiservertest.Target]map[string]string{}
	for _, target := range apiservertest.Targets() {
		t.Run(string(target), func(t *testing.T) {
			env := apiservertest.Start(t, target, apiservertest.Options{})
			fx := newFixture(t, env, run)
			logs := map[string][]exchange{}
			for _, tc := range transcripts {
				t.Run(tc.name, func(t *testing.T) {
					logs[tc.name] = runTranscript(t, fx, tc)
				})
			}
			s := map[string]string{fx.group: "{group}"}
			for _, tc := range transcripts {
				s[namespaceName(tc.name, run)] = "{ns}"
			}
			mu.Lock()
			results[target], subst[target] = logs, s
			mu.Unlock()
		})
	}
	emb, real := results[apiservertest.Embedded], results[apiservertest.RealServer]
	if emb == nil || real == nil {
		fmt.Printf("conformance: not compared: ran on %d of the 2 targets (see the skipped subtest)\n", len(results))
		return
	}
	identical, compared := 0, 0
	var report strings.Builder
	for _, tc := range transcripts {
		a, b := emb[tc.name], real[tc.name]
		if a == nil || b == nil {
			continue
		}
		compared++
		na, la := normalize(a, subst[apiservertest.Embedded])
		nb, _ := normalize(b, subst[apiservertest.RealServer])
		var diffs []string
		for i := range max(len(na), len(nb)) {
			switch {
			case i >= len(na):
				diffs = append(diffs, fmt.Sprintf("step %d: embedded=<no step> real=%s", i, show(nb[i])))
			case i >= len(nb):
				diffs = append(diffs, fmt.Sprintf("step %d (%s): embedded=%s real=<no step>", i, la[i], show(na[i])))
			default:
				var d []string
				diff("", na[i], nb[i], &d)
				for _, line := range d {
					diffs = append(diffs, fmt.Sprintf("step %d (%s): %s", i, la[i], line))
				}
			}
		}
		if len(diffs) == 0 {
			identical++
			continue
		}
		fmt.Fprintf(&report, "--- %s: %d differences\n", tc.name, len(diffs))
		for _, d := range diffs {
			fmt.Fprintf(&report, "    %s\n", d)
		}
		if reason, ok := knownDifferences[tc.name]; ok {
			fmt.Fprintf(&report, "    (known difference: %s)\n", reason)
			continue
		}
		t.Errorf("transcript %s differs between the embedded and the real server", tc.name)
	}
	fmt.Printf("conformance: %d/%d transcripts identical\n%s", identical, compared, report.String())
	if dir := os.Getenv("KLOOP_CONFORMANCE_DUMP"); dir != "" {
		dump(t, dir, emb, real, subst)
	}
}

// dump writes each target's normalized transcripts as JSON files into dir
// ($KLOOP_CONFORMANCE_DUMP), to read whole responses when a difference needs
// more context than the report's lines.
func dump(t *testing.T, dir string, emb, real map[string][]exchange, subst map[apiservertest.Target]map[string]string) {
	for target, logs := range map[apiservertest.Target]map[string][]exchange{apiservertest.Embedded: emb, apiservertest.RealServer: real} {
		for name, log := range logs {
			n, labels := normalize(log, subst[target])
			var out []any
			for i := range n {
				out = append(out, map[string]any{"step": labels[i], "response": n[i]})
			}
			b, _ := json.MarshalIndent(out, "", "  ")
			if err := os.WriteFile(fmt.Sprintf("%s/%s.%s.json", dir, name, target), b, 0o644); err != nil {
				t.Errorf("dump: %v", err)
			}
		}
	}
}

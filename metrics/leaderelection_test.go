package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"kloop.dev/kloop/leaderelection"
)

func TestLeaderElectionMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	l, err := NewLeaderElection(reg)
	if err != nil {
		t.Fatal(err)
	}
	leading := true
	l.Register("my-operator-lock", func(s *leaderelection.Status) { s.Leading, s.SlowPaths = leading, 3 })
	l.Register("other-lock", func(s *leaderelection.Status) {})
	want := `
# HELP leader_election_master_status Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.
# TYPE leader_election_master_status gauge
leader_election_master_status{name="my-operator-lock"} 1
leader_election_master_status{name="other-lock"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "leader_election_master_status"); err != nil {
		t.Fatal(err)
	}
	leading = false
	if err := testutil.GatherAndCompare(reg, strings.NewReader(strings.Replace(want, `"my-operator-lock"} 1`, `"my-operator-lock"} 0`, 1)), "leader_election_master_status"); err != nil {
		t.Fatal(err)
	}
	if _, err := NewLeaderElection(nil); err == nil {
		t.Fatal("nil registerer accepted")
	}
}

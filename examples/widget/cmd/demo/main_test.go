package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"kloop.dev/kloop/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "flag provided but not defined"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		var stderr testutil.SyncBuffer
		if err := run(context.Background(), tc.args, &testutil.SyncBuffer{}, &stderr); !errors.Is(err, errUsage) || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("run(%q) = %v, stderr %q; want a usage error saying %q", tc.args, err, stderr.String(), tc.want)
		}
	}
	if err := run(context.Background(), []string{"--cloud-failure-rate", "1.5"}, &testutil.SyncBuffer{}, &testutil.SyncBuffer{}); err == nil || !strings.Contains(err.Error(), "cloud failure rate 1.5") {
		t.Errorf("--cloud-failure-rate 1.5: %v", err)
	}
}

// The flags reach the demo; the output is not a terminal, so plain lines.
func TestRun(t *testing.T) {
	var stdout testutil.SyncBuffer
	log := t.TempDir() + "/demo.log"
	if err := run(context.Background(), []string{"--widgets", "12", "--workers", "2", "--cloud-failure-rate", "0.1", "--log", log}, &stdout, &testutil.SyncBuffer{}); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	for _, want := range []string{"Widget controller (2 workers)", "10% failures", "12 widgets Running, 12 instances in the cloud, 0 leaked, 0 duplicated"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
}

package main

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"kloop.dev/kloop/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The README's first command: the launcher says it is building, builds the
// demo, runs it with its arguments (here a small run with a failing
// cloud), and passes on its output and exit code.
func TestLaunch(t *testing.T) {
	var env []string
	if raceEnabled {
		env = append(env, "GOFLAGS=-race")
	}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"run", []string{"--widgets", "16", "--cloud-failure-rate", "0.1"}, 0,
			"16 widgets Running, 16 instances in the cloud, 0 leaked, 0 duplicated", "demo: building the Widget operator demo"},
		{"usage error", []string{"--no-such-flag"}, 2, "", "flag provided but not defined: -no-such-flag"},
		{"failure", []string{"--widgets", "-3"}, 1, "", "widgets -3: want 1 to 20000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr testutil.SyncBuffer
			if code := launch(context.Background(), tc.args, env, strings.NewReader(""), &stdout, &stderr); code != tc.code {
				t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stdout:\n%s\nstderr:\n%s\nwant %q and %q", stdout.String(), stderr.String(), tc.stdout, tc.stderr)
			}
		})
	}
}

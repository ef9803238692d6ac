package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"kloop.dev/kloop/examples/cloud/cloudclient"
	"kloop.dev/kloop/internal/testutil"
)

func TestCloudCommandFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"cloud", "--bogus"}, 2, "flag provided but not defined"},
		{[]string{"cloud", "extra"}, 2, "unexpected arguments"},
		{[]string{"cloud", "--failure-rate", "2"}, 1, "FailureRate 2 is not between 0 and 1"},
		{[]string{"cloud", "--provision-delay", "-1s"}, 1, "ProvisionDelay -1s is negative"},
		{[]string{"cloud", "--addr", "nonsense"}, 1, "nonsense"},
		{[]string{"cloud", "-h"}, 0, "--visibility-delay"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stderr testutil.SyncBuffer
			if code := run(context.Background(), tc.args, &testutil.SyncBuffer{}, &stderr); code != tc.code {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), strings.TrimPrefix(tc.out, "-")) {
				t.Errorf("stderr lacks %q:\n%s", tc.out, stderr.String())
			}
		})
	}
}

// kloop cloud serves the API at the URL it prints, with the behaviour its
// flags set, and keeps the instances in its state file.
func TestCloudCommand(t *testing.T) {
	state := filepath.Join(t.TempDir(), "cloud.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr testutil.SyncBuffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"cloud", "--provision-delay", "1h", "--state-file", state, "--seed", "7"}, &stdout, &stderr)
	}()
	urlRE := regexp.MustCompile(`cloud serving at (http://\S+)`)
	testutil.Eventually(t, "the URL printed", func() bool { return urlRE.MatchString(stdout.String()) })
	cc, err := cloudclient.New(urlRE.FindStringSubmatch(stdout.String())[1], cloudclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in, err := cc.Create(ctx, cloudclient.CreateInput{ClientToken: "t", Region: "local-1", Size: "small"})
	if err != nil {
		t.Fatal(err)
	}
	if in.State != cloudclient.Pending {
		t.Errorf("state %s with --provision-delay 1h, want pending", in.State)
	}
	cancel()
	if c := <-code; c != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", c, stderr.String())
	}
	data, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	var saved struct{ Instances []cloudclient.Instance }
	if err := json.Unmarshal(data, &saved); err != nil {
		t.Fatal(err)
	}
	if len(saved.Instances) != 1 || saved.Instances[0].ID != in.ID {
		t.Errorf("state file holds %+v, want %s", saved.Instances, in.ID)
	}
}

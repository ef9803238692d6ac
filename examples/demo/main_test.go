package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The scripted session runs to its end, and what it shows holds: the ten
// edits were merged, the deleted ConfigMap came back, the finalizer held the
// Widget until cleanup, and the metrics were scraped.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, false); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"created CustomResourceDefinition widgets.demo.kloop.dev",
		"created ConfigMap default/w1-color",
		"Owns woke w2, which recreated it",
		`event of w2: Normal Created "created ConfigMap w2-color" (x2, from widget-controller)`,
		"cleanup of default/w1 done, removing the finalizer",
		"w1 is gone",
		`metrics: controller_runtime_reconcile_total{controller="widget",result="success"}`,
		`metrics: workqueue_adds_total{controller="widget",name="widget"}`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	m := regexp.MustCompile(`w1 reconciled (\d+) times in all for 1 create \+ 10 edits`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("no reconcile count in:\n%s", got)
	}
	// One create takes two reconciles (the finalizer and the owned ConfigMap
	// wake it once more); the ten edits, made while a reconcile is busy,
	// come in at most a few more.
	if n, _ := strconv.Atoi(m[1]); n > 7 {
		t.Errorf("w1 reconciled %d times: the edits were not merged\n%s", n, got)
	}
}

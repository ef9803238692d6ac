package main

import (
	"bytes"
	"context"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRawLoop(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	want := "default/alpha kloop.dev/seen=true\ndefault/beta kloop.dev/seen=true\ndefault/gamma kloop.dev/seen=true\ndefault/kube-root-ca.crt kloop.dev/seen=true\npatched 4 ConfigMaps\n"
	if out.String() != want {
		t.Fatalf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}

package main

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDemoRuns(t *testing.T) {
	if err := run(); err != nil {
		t.Fatal(err)
	}
}

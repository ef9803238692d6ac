package testcrd

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// Resource is the Widgets' resource.
var Resource = GroupVersion.WithResource("widgets")

// Install creates the Widget CRD on the server of cfg unless it exists
// (a CRD is cluster-scoped: every test of a binary that runs on the shared
// real kube-apiserver sees the same one), then waits until it is usable: its
// Established condition is True, discovery lists the widgets resource, and a
// list of Widgets succeeds. It returns ctx's error, with the last thing it
// waited for, when ctx ends first; give it a deadline.
func Install(ctx context.Context, cfg *rest.Config) error {
	if err := apiservertest.InstallCRDs(ctx, cfg, CRD()); err != nil {
		return fmt.Errorf("testcrd: %w", err)
	}
	return nil
}

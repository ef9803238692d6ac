package operator

import (
	"fmt"
	"time"

	"kloop.dev/kloop/examples/cloud/cloudclient"
	"kloop.dev/kloop/examples/widget/internal/controller"
	"kloop.dev/kloop/manager"
)

// Options configure the operator. The zero value works.
type Options struct {
	// Workers is the Widget controller's number of workers. Default 4.
	Workers int
	// PendingPoll is how soon a Widget whose instance is not running yet
	// is reconciled again. Default 1 s.
	PendingPoll time.Duration
	// Poll is how often a running Widget's instance is checked. Default 30 s.
	Poll time.Duration
	// ConsistencyWindow is how long after its creation a Widget's instance
	// may be invisible to the cloud's describes. Default 10 s.
	ConsistencyWindow time.Duration
	// NoWidgetSets leaves the WidgetSet controller out. Default false.
	NoWidgetSets bool
}

// AddToManager registers the operator's controllers with mgr; they call
// the cloud through cloud.
func AddToManager(mgr *manager.Manager, cloud *cloudclient.Client, opts Options) error {
	if _, err := controller.NewWidget(mgr, cloud, controller.WidgetOptions{
		MaxConcurrentReconciles: opts.Workers, PendingPoll: opts.PendingPoll, Poll: opts.Poll,
		ConsistencyWindow: opts.ConsistencyWindow,
	}); err != nil {
		return fmt.Errorf("operator: %w", err)
	}
	if opts.NoWidgetSets {
		return nil
	}
	if _, err := controller.NewWidgetSet(mgr, controller.WidgetSetOptions{}); err != nil {
		return fmt.Errorf("operator: %w", err)
	}
	return nil
}

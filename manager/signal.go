package manager

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// SignalContext returns a context that is cancelled on the first SIGINT or
// SIGTERM, for Start: the manager then shuts down in order. A second signal
// — or any signal once the context is done — exits the process at once
// with code 1, for a shutdown that hangs. context.Cause of the context
// names the signal.
//
// Unlike controller-runtime's SetupSignalHandler it may be called more than
// once: nothing is global. stop cancels the context and releases the
// signal handlers (the signals' default behaviour is back once no other
// caller of signal.Notify holds them); call it when the program no longer
// wants either, usually with defer.
func SignalContext(parent context.Context) (ctx context.Context, stop context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	// Buffered for both signals: signal.Notify does not block.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case sig := <-sigs:
			cancel(fmt.Errorf("manager: received signal %v", sig))
		case <-ctx.Done():
		case <-done:
			return
		}
		select {
		case <-sigs:
			os.Exit(1)
		case <-done:
		}
	})
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(sigs)
			close(done)
			wg.Wait()
			cancel(context.Canceled)
		})
	}
}

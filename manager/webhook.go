package manager

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"kloop.dev/kloop/metrics"
	"kloop.dev/kloop/webhook"
)

// webhookServing is the manager's webhook server, run once asked for.
type webhookServing struct {
	srv  *webhook.Server
	once sync.Once // adds srv to the runnables and its readiness check
}

// newWebhookServer makes the webhook server of Options.Webhook, with the
// manager's webhook metrics (appended to registered).
func (m *Manager) newWebhookServer(registered *[]prometheus.Collector) error {
	opts := m.opts.Webhook
	if opts.Metrics == nil {
		wm, err := metrics.NewWebhook(m.opts.Registerer)
		if err != nil {
			return fmt.Errorf("manager: webhook metrics: %w", err)
		}
		*registered = append(*registered, wm)
		opts.Metrics = wm
	}
	srv, err := webhook.New(opts)
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	m.webhook.srv = srv
	return nil
}

// WebhookServer returns the manager's webhook server (Options.Webhook),
// as controller-runtime's GetWebhookServer: the first call adds it to the
// runnables that run on every replica, and its "webhook" readiness check
// (it completes TLS handshakes). Register admission and conversion
// webhooks on it (kloop.dev/kloop/builder's WebhookManagedBy does); after
// the manager's Started, its Addr, URL and CABundle are known once its own
// Started is closed.
func (m *Manager) WebhookServer() *webhook.Server {
	m.webhook.once.Do(func() {
		if err := m.others.add(m.webhook.srv); err != nil {
			m.log.Error("webhook server not started", "err", err)
			return
		}
		if err := m.readyz.add("webhook", m.webhook.srv.ReadyCheck); err != nil {
			m.log.Error("webhook server: no readiness check", "err", err)
		}
	})
	return m.webhook.srv
}

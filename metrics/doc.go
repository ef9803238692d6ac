// Package metrics holds kloop's Prometheus metrics: implementations of the
// metrics interfaces that the stages declare (workqueue.MetricsProvider, …),
// registered on the prometheus.Registerer you pass in. There is no global
// registry.
//
// Names and labels are controller-runtime's, so that existing dashboards and
// alerts read kloop's metrics unchanged:
//
//	workqueue_depth{name,controller,priority}
//	workqueue_adds_total{name,controller}
//	workqueue_queue_duration_seconds{name,controller}
//	workqueue_work_duration_seconds{name,controller}
//	workqueue_unfinished_work_seconds{name,controller}
//	workqueue_longest_running_processor_seconds{name,controller}
//	workqueue_retries_total{name,controller}
//
//	controller_runtime_reconcile_total{controller,result=success|error|requeue_after|requeue}
//	controller_runtime_reconcile_errors_total{controller}
//	controller_runtime_terminal_reconcile_errors_total{controller}
//	controller_runtime_reconcile_panics_total{controller}
//	controller_runtime_reconcile_timeouts_total{controller}
//	controller_runtime_reconcile_time_seconds{controller}
//	controller_runtime_max_concurrent_reconciles{controller}
//	controller_runtime_active_workers{controller}
//
//	leader_election_master_status{name}
//	leader_election_slowpath_total{name}
//
//	rest_client_requests_total{code,method,host}
//
//	controller_runtime_webhook_requests_total{webhook,code}
//	controller_runtime_webhook_latency_seconds{webhook}
//	controller_runtime_webhook_requests_in_flight{webhook}
//	controller_runtime_webhook_panics_total
//	controller_runtime_conversion_webhook_panics_total
//
// RegisterRuntime adds the Go runtime and process collectors (go_*,
// process_*), as controller-runtime registers them on its registry.
//
// The queues keep their own statistics and the collector reads them when
// Prometheus scrapes: no metric call sits on a queue's hot path, and the
// unfinished-work and longest-running gauges are exact at scrape time rather
// than refreshed by a polling goroutine.
//
// Each provider takes a name once: a second controller, queue or election
// under a name it already has is refused, and its New fails with that error
// (controller-runtime likewise refuses two controllers of one name in a
// process; here the scope is the registry, so tests with a registry each
// need no escape hatch).
package metrics

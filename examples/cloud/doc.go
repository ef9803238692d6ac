// Package cloud is a local cloud: an HTTP service that provisions
// instances the way a real cloud API does, for the Widget operator
// (examples/widget) to own resources outside the cluster that it must
// never duplicate or leak.
//
//	c, err := cloud.New(cloud.Options{ProvisionDelay: time.Second, VisibilityDelay: 2 * time.Second})
//	go c.Start(ctx) // serves on 127.0.0.1:<free port>
//	<-c.Ready()
//	cc, err := cloudclient.New(c.URL(), cloudclient.Options{})
//
// or standalone: `kloop cloud --addr 127.0.0.1:7070 --state-file cloud.json`.
//
// It behaves as a cloud does where an operator gets it wrong:
//
//   - asynchronous: an instance is pending for ProvisionDelay, then
//     running with an endpoint; a modify makes it pending again; a delete
//     makes it shutting-down, then terminated (terminated instances stay
//     describable by ID, as EC2's do);
//   - idempotent creates: a create carrying a client token the cloud has
//     seen returns the instance the first create made (409 if the
//     parameters differ), so a caller that lost the answer can ask again;
//   - tags, and describe by tag;
//   - eventually consistent describes: a new instance is invisible to
//     describe by ID and by tag for VisibilityDelay (a 404 and a missing
//     entry) — the control plane knows it at once, so a create with its
//     token, a modify or a delete by its ID work throughout;
//   - throttling: beyond RateLimit requests a second (Burst at once) the
//     answer is 429 with a Retry-After;
//   - failures: FailureRate of the requests fail with 500, and half of the
//     failed creates, modifies and deletes fail after the change was made
//     (an ambiguous outcome, as a timeout is);
//   - an optional state file, loaded by New and written while Start runs
//     and when it returns.
//
// Instances returns the truth — every instance, visible or not — for a
// test or a demo to count leaks and duplicates; Stats counts the
// requests, throttles and failures. The HTTP API and its Go client are
// in cloudclient.
package cloud

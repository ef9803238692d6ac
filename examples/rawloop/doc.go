// Command rawloop is a controller in the seeds' client-go style, built from
// kloop's stages by hand: an embedded API server, an informer on ConfigMaps
// whose handler enqueues keys (never objects), a rate-limited work queue, and
// one worker loop that reconciles each key by reading the informer's cache
// and writing to the API server. The reconcile stamps every ConfigMap with
// the label kloop.dev/seen=true.
//
//	go run ./examples/rawloop
package main

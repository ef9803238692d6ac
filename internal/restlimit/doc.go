// Package restlimit builds the client-side rate limit of a rest.Config the
// way client-go's REST client does, for kloop's own REST callers (the
// reflector's lists and watches, the informer factory, the client), with
// controller-runtime's reading of QPS 0: no limit.
package restlimit

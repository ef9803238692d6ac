// Package conformance is the differential conformance suite of kloop's
// embedded API server: transcripts of requests run against the embedded
// server and against the real kube-apiserver (v1.37.2 with etcd v3.6.16,
// built by hack/realk8s.sh), whose responses are normalized and compared.
// The package has no API; it is its test.
//
// # Running
//
//	go test -count=1 ./apiserver/conformance/
//
// prints "conformance: N/M transcripts identical" and, for every
// transcript that differs, one line per difference: the step (method and
// path, names normalized), the JSON path in the response and both values:
//
//	step 3 (PUT /api/v1/namespaces/{ns}/configmaps/a): .body.metadata.generation: embedded=1 real=<absent>
//
// TestConformance fails when a transcript differs (knownDifferences may
// excuse one, with the reason the embedded server cannot match; it is
// empty). When the real binaries are not built, the real target skips
// loudly and nothing is compared ($KLOOP_REQUIRE_REAL_K8S=1 turns the skip
// into a failure); KLOOP_TEST_TARGETS=embedded runs the transcripts on the
// embedded server alone, which still checks each step's expected status
// code. KLOOP_CONFORMANCE_DUMP=<dir> writes every normalized transcript of
// both targets as JSON files there.
//
// # Adding a transcript
//
// Append to one of the parts of transcripts (transcripts_test.go,
// transcripts_edges_test.go, transcripts_rbac_test.go,
// transcripts_apply_test.go, …) a name and a function that
// issues requests through *T: Get, GetTable (a meta.k8s.io Table, as
// kubectl get asks; the Content-Type is recorded too), Post, Put, Patch (merge, json,
// strategic, or any content type), Delete (with DeleteOptions as body),
// Watch (with a stop condition: Events(n) or UntilInitialEventsEnd) and
// Compact. GetAs, WatchAs and Accepting(accept, f) send an Accept header
// of the transcript's choice (protobuf, YAML, the metadata-only forms) and
// record the answer's Content-Type; answers in protobuf (objects, lists,
// Status errors, watch streams frame by frame) and YAML are recorded
// decoded into JSON (protobuf_test.go), so they normalize and compare as
// JSON answers do. Paths and bodies may use {ns} (the transcript's own, fresh
// namespace) and {group} (the API group of the suite's Gadget CRD:
// namespaced, a structural schema with a default and an enum, a status
// subresource, a selectable field spec.color). Values of earlier responses
// are read with Resp.RV, Resp.UID and Resp.Str. Every step states its
// expected status code with Want, which fails the test on either target on
// its own. A transcript must not branch on responses: both targets must
// issue the same requests.
//
// What controllers do after a request (garbage collection, namespace
// deletion) comes a moment later, by each server's own timing:
// tr.awaitGet polls, unrecorded, until a path answers a code (and has some
// fields set), and the transcript then records the result. The transcripts
// gc-* compare kube-controller-manager's garbage collector with the
// embedded server's, namespace-deleted-with-finalizers its namespace
// controller.
//
// Each transcript's namespace holds its default ServiceAccount and
// kube-root-ca.crt ConfigMap (kube-controller-manager's, and the embedded
// server's own controllers') before the transcript starts: the harness waits
// for them, unrecorded.
//
// Requests are the administrator's unless made within tr.as(cfg, ...),
// with the credentials of a user of apiservertest's ConfigFor (tr.user) or
// a configuration impersonating one; tr.await polls, unrecorded, until the
// server applies new RBAC objects (kube-apiserver's informers follow them
// a moment after their writes). Two answers are recorded with what is
// random per run put aside: SelfSubjectRulesReviews with their rules
// sorted (kube-apiserver lists them in its informers' map order), and
// TokenReviews with the token replaced by "<token>".
//
// # Normalization
//
// Each target's responses are rewritten so that what legitimately differs
// between two runs compares equal, and nothing else does (the doc comment
// of normalizer in normalize_test.go gives the reason for each rule):
// object resourceVersions become rv1, rv2… in order of first appearance;
// list and bookmark resourceVersions become "rvN+" (not older than object
// revision N: the real server's current revision also counts other
// clients' writes); resourceVersions in Conflict/Expired messages are
// rewritten the same way; uids become uid1, uid2…; timestamps become
// <time>; generated names, the namespace and the CRD group become
// placeholders; Service cluster IPs become <cluster-ip> (random, from each
// server's configured range), in objects and Table cells; Table cells of
// Age, Last Seen and First Seen become <age> (wall clock, to the second);
// continue tokens become <continue> (opaque); managedFields entries are
// sorted without their times (kube-apiserver orders them by the second of
// their time); TokenRequest tokens and their credential IDs, and the
// kubernetes Service's target port (each server's own), become
// placeholders. Watch bookmarks are kept only when they
// end the initial events of a watch-list: kube-apiserver sends the others
// on its own timer. Status codes, Status reasons, messages and details,
// Warning headers, defaults, generations, list metadata and watch events
// are compared as they are.
package conformance

package conformance

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A normalizer rewrites one target's transcript so that what legitimately
// differs between two runs (of the same server, or of two servers) compares
// equal, and nothing else does. What it rewrites, and why each is not a
// behaviour difference:
//
//   - resourceVersion of objects → "rv1", "rv2", … in order of first
//     appearance. The values are etcd revisions shared by every writer of
//     the real cluster (another test, the apiserver's own lease); only their
//     identity and order mean something to a client.
//   - resourceVersion of lists and bookmarks → "rvN+", N being the newest
//     object revision of the transcript not newer than it. A list's revision
//     is the store's current revision, which on the real server also counts
//     writes of other clients (kube-apiserver renews its identity Lease every
//     10 s); Kubernetes promises only that it is not older than the objects
//     listed, which "rvN+" keeps.
//   - Numbers inside the messages of Conflict, Expired and Timeout Statuses
//     are resourceVersions ("ResourceVersion in precondition: 12"); they are
//     rewritten by the same two rules.
//   - uid → "uid1", "uid2", … in order of first appearance, everywhere
//     (messages too): random by definition.
//   - Timestamps (any RFC 3339 string: creationTimestamp, deletionTimestamp,
//     condition times) → "<time>": wall clock.
//   - Names made from generateName → prefix + "{gen1}", …: random suffixes.
//   - The transcript's namespace and the run's CRD group → "{ns}" and
//     "{group}", everywhere: both carry a random suffix (the real server is
//     shared by every test of the binary, so names must be unique per run).
//   - spec.clusterIP / spec.clusterIPs of Services → "<cluster-ip>" when they
//     are IP addresses: allocated at random from a range each server is
//     configured with (--service-cluster-ip-range).
//   - The token of a TokenRequest → "<token>", and a token's credential-id
//     ("JTI=…") in a SelfSubjectReview → "JTI=<jti>": signed by each
//     server's own key, with random IDs.
//   - data["ca.crt"] of the kube-root-ca.crt ConfigMaps → "<cluster-ca>"
//     when it is a PEM certificate: each server's own CA (a self-signed
//     serving certificate made at its start).
//   - The target port of the kubernetes Service in default → "<apiserver-port>":
//     each server's own port, random on both; in its Endpoints and
//     EndpointSlice, the port → "<apiserver-port>" and the address →
//     "<apiserver-address>" (the embedded server's listening address, the
//     real one's --advertise-address).
//   - Table cells of the Age, Last Seen and First Seen columns → "<age>" (wall clock rounded to the
//     second) and of the Cluster-IP column → "<cluster-ip>" (as above).
//   - metadata.continue → "<continue>" when not empty: the token is opaque
//     and its encoding is the server's own (whether there is one is kept).
//   - metadata.managedFields entries are sorted by operation, manager,
//     apiVersion and subresource: kube-apiserver sorts them by operation,
//     then by the second of their time (wall clock, rewritten above), then
//     by those, so two writes in one second or in two swap places.
type normalizer struct {
	subst   *strings.Replacer
	rvName  map[string]string // object resourceVersion → "rvN"
	rvs     []int64           // the object resourceVersions, sorted
	uidName map[string]string // uid → "uidN"
	gen     map[string]string // generated name → prefix + "{genN}"
}

// normalize returns a target's transcript in comparable form: one JSON
// value per exchange, and the exchanges' labels.
func normalize(log []exchange, subst map[string]string) (out []any, labels []string) {
	n := &normalizer{rvName: map[string]string{}, uidName: map[string]string{}, gen: map[string]string{}}
	for _, ex := range log {
		n.collect(ex.Body, false)
		for _, ev := range ex.Events {
			if m, ok := ev.(map[string]any); ok {
				n.collect(m["object"], m["type"] == "BOOKMARK")
			}
		}
	}
	sort.Slice(n.rvs, func(i, j int) bool { return n.rvs[i] < n.rvs[j] })
	var pairs []string
	for k, v := range subst {
		pairs = append(pairs, k, v)
	}
	for k, v := range n.uidName {
		pairs = append(pairs, k, v)
	}
	for k, v := range n.gen {
		pairs = append(pairs, k, v)
	}
	n.subst = strings.NewReplacer(longestFirst(pairs)...)
	for _, ex := range log {
		rec := map[string]any{"code": ex.Code}
		if ex.Body != nil {
			rec["body"] = n.rewrite(ex.Body, false)
		}
		if ex.ContentType != "" {
			rec["contentType"] = ex.ContentType
		}
		if len(ex.Warnings) > 0 {
			var ws []any
			for _, w := range ex.Warnings {
				ws = append(ws, n.str(w))
			}
			rec["warnings"] = ws
		}
		if ex.Events != nil {
			var evs []any
			for _, ev := range ex.Events {
				m, ok := ev.(map[string]any)
				if !ok {
					evs = append(evs, ev)
					continue
				}
				evs = append(evs, map[string]any{"type": m["type"], "object": n.rewrite(m["object"], m["type"] == "BOOKMARK")})
			}
			rec["events"] = evs
		}
		out = append(out, rec)
		labels = append(labels, n.label(ex.Step))
	}
	return out, labels
}

// longestFirst orders replacement pairs so that longer old strings win
// (strings.Replacer picks the first pair that matches at a position).
func longestFirst(pairs []string) []string {
	type pair struct{ old, new string }
	var ps []pair
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] != "" {
			ps = append(ps, pair{pairs[i], pairs[i+1]})
		}
	}
	sort.Slice(ps, func(i, j int) bool {
		if len(ps[i].old) != len(ps[j].old) {
			return len(ps[i].old) > len(ps[j].old)
		}
		return ps[i].old < ps[j].old
	})
	out := make([]string, 0, 2*len(ps))
	for _, p := range ps {
		out = append(out, p.old, p.new)
	}
	return out
}

// collect walks, in document order, the places that hold identities: the
// metadata of objects, list items, Status details.
func (n *normalizer) collect(v any, bookmark bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	md, _ := m["metadata"].(map[string]any)
	switch {
	case m["kind"] == "Status":
		if d, ok := m["details"].(map[string]any); ok {
			n.uid(d["uid"])
		}
		return
	case m["kind"] == "Table":
		rows, _ := m["rows"].([]any)
		for _, r := range rows {
			n.collect(r.(map[string]any)["object"], false)
		}
		return
	case isList(m):
		items, _ := m["items"].([]any)
		for _, it := range items {
			n.collect(it, false)
		}
		return
	case bookmark || md == nil:
		return
	}
	n.uid(md["uid"])
	if rv, ok := md["resourceVersion"].(string); ok && rv != "" {
		if _, seen := n.rvName[rv]; !seen {
			n.rvName[rv] = fmt.Sprintf("rv%d", len(n.rvName)+1)
			if v, err := strconv.ParseInt(rv, 10, 64); err == nil {
				n.rvs = append(n.rvs, v)
			}
		}
	}
	if prefix, _ := md["generateName"].(string); prefix != "" {
		if name, _ := md["name"].(string); strings.HasPrefix(name, prefix) && name != prefix {
			if _, seen := n.gen[name]; !seen {
				n.gen[name] = fmt.Sprintf("%s{gen%d}", prefix, len(n.gen)+1)
			}
		}
	}
}

func (n *normalizer) uid(v any) {
	if u, ok := v.(string); ok && u != "" {
		if _, seen := n.uidName[u]; !seen {
			n.uidName[u] = fmt.Sprintf("uid%d", len(n.uidName)+1)
		}
	}
}

func isList(m map[string]any) bool {
	k, _ := m["kind"].(string)
	_, hasItems := m["items"]
	return hasItems && strings.HasSuffix(k, "List")
}

// rewrite returns the normalized copy of a response body or event object.
func (n *normalizer) rewrite(v any, bookmark bool) any {
	m, ok := v.(map[string]any)
	if !ok {
		return n.generic(v)
	}
	out := n.generic(m).(map[string]any)
	md, _ := out["metadata"].(map[string]any)
	rawMD, _ := m["metadata"].(map[string]any)
	// Tokens and their IDs: random by definition.
	if m["kind"] == "TokenRequest" {
		if st, ok := out["status"].(map[string]any); ok {
			if _, ok := st["token"].(string); ok {
				st["token"] = "<token>"
			}
		}
	}
	if m["kind"] == "SelfSubjectReview" {
		if ids, ok := jsonPath(out, "status", "userInfo", "extra", "authentication.kubernetes.io/credential-id").([]any); ok {
			for i, id := range ids {
				if s, ok := id.(string); ok && strings.HasPrefix(s, "JTI=") {
					ids[i] = "JTI=<jti>"
				}
			}
		}
	}
	switch {
	case m["kind"] == "Status":
		if reason, _ := m["reason"].(string); slices.Contains([]string{"Conflict", "Expired", "Gone", "Timeout"}, reason) {
			if msg, ok := m["message"].(string); ok {
				out["message"] = n.numbers(n.str(msg)) // names first: uids hold digits
			}
		}
		n.continueToken(md)
	case m["kind"] == "Table":
		n.collectionRV(md, rawMD)
		n.continueToken(md)
		n.tableAges(out)
		rows, _ := m["rows"].([]any)
		outRows, _ := out["rows"].([]any)
		for i, r := range rows {
			if obj, ok := r.(map[string]any)["object"]; ok {
				outRows[i].(map[string]any)["object"] = n.rewrite(obj, false)
			}
		}
	case m["kind"] == "Table":
		n.collectionRV(md, rawMD)
		n.continueToken(md)
		n.tableAges(out)
		rows, _ := m["rows"].([]any)
		outRows, _ := out["rows"].([]any)
		for i, r := range rows {
			if obj, ok := r.(map[string]any)["object"]; ok {
				outRows[i].(map[string]any)["object"] = n.rewrite(obj, false)
			}
		}
	case isList(m):
		n.collectionRV(md, rawMD)
		n.continueToken(md)
		items, _ := m["items"].([]any)
		var outItems []any
		for _, it := range items {
			outItems = append(outItems, n.rewrite(it, false))
		}
		out["items"] = outItems
	case bookmark:
		n.collectionRV(md, rawMD)
	case md != nil:
		if rv, ok := rawMD["resourceVersion"].(string); ok {
			if name, ok := n.rvName[rv]; ok {
				md["resourceVersion"] = name
			}
		}
		sortManagedFields(md)
		if md["name"] == "kube-root-ca.crt" {
			if data, ok := out["data"].(map[string]any); ok {
				if ca, ok := data["ca.crt"].(string); ok && strings.HasPrefix(ca, "-----BEGIN CERTIFICATE-----") {
					data["ca.crt"] = "<cluster-ca>"
				}
			}
		}
		if m["kind"] == "Service" {
			if spec, ok := out["spec"].(map[string]any); ok {
				if ip, ok := spec["clusterIP"].(string); ok && isIP(ip) {
					spec["clusterIP"] = "<cluster-ip>"
				}
				if ips, ok := spec["clusterIPs"].([]any); ok {
					for i, ip := range ips {
						if s, ok := ip.(string); ok && isIP(s) {
							ips[i] = "<cluster-ip>"
						}
					}
				}
				if md["name"] == "kubernetes" && md["namespace"] == "default" {
					ports, _ := spec["ports"].([]any)
					for _, p := range ports {
						if pm, ok := p.(map[string]any); ok {
							pm["targetPort"] = "<apiserver-port>"
						}
					}
				}
			}
		}
		if md["name"] == "kubernetes" && md["namespace"] == "default" {
			apiserverEndpoints(m["kind"], out)
		}
	}
	return out
}

// apiserverEndpoints replaces the address and port of the kubernetes
// Service's Endpoints or EndpointSlice (obj, of kind) with placeholders.
func apiserverEndpoints(kind any, obj map[string]any) {
	ports := func(l any) {
		ps, _ := l.([]any)
		for _, p := range ps {
			if pm, ok := p.(map[string]any); ok {
				pm["port"] = "<apiserver-port>"
			}
		}
	}
	addresses := func(l any, key string) {
		as, _ := l.([]any)
		for i, a := range as {
			if am, ok := a.(map[string]any); ok && key != "" {
				am[key] = "<apiserver-address>"
			} else if key == "" {
				as[i] = "<apiserver-address>"
			}
		}
	}
	switch kind {
	case "Endpoints":
		subsets, _ := obj["subsets"].([]any)
		for _, ss := range subsets {
			if sm, ok := ss.(map[string]any); ok {
				addresses(sm["addresses"], "ip")
				ports(sm["ports"])
			}
		}
	case "EndpointSlice":
		ports(obj["ports"])
		eps, _ := obj["endpoints"].([]any)
		for _, ep := range eps {
			if em, ok := ep.(map[string]any); ok {
				addresses(em["addresses"], "")
			}
		}
	}
}

// tableAges replaces the cells of Table columns named Age with "<age>"
// (wall clock, rounded to the second, so two runs may differ by one) and
// those of Cluster-IP columns holding an address with "<cluster-ip>" (as
// spec.clusterIP).
func (n *normalizer) tableAges(t map[string]any) {
	cols, _ := t["columnDefinitions"].([]any)
	rows, _ := t["rows"].([]any)
	for i, c := range cols {
		name := c.(map[string]any)["name"]
		for _, r := range rows {
			cells, _ := r.(map[string]any)["cells"].([]any)
			if i >= len(cells) {
				continue
			}
			ip, ok := cells[i].(string)
			switch {
			case name == "Age" || name == "Last Seen" || name == "First Seen":
				cells[i] = "<age>"
			case name == "Cluster-IP" && ok && isIP(ip):
				cells[i] = "<cluster-ip>"
			}
		}
	}
}

func isIP(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

func (n *normalizer) collectionRV(md, raw map[string]any) {
	if rv, ok := raw["resourceVersion"].(string); ok && rv != "" && md != nil {
		md["resourceVersion"] = n.plus(rv)
	}
}

func (n *normalizer) continueToken(md map[string]any) {
	if c, ok := md["continue"].(string); ok && c != "" {
		md["continue"] = "<continue>"
	}
}

// plus names a collection's resourceVersion by the newest object revision
// not newer than it.
func (n *normalizer) plus(rv string) string {
	v, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		return "<invalid rv " + rv + ">"
	}
	i := sort.Search(len(n.rvs), func(i int) bool { return n.rvs[i] > v })
	if i == 0 {
		return "rv0+"
	}
	return n.rvName[strconv.FormatInt(n.rvs[i-1], 10)] + "+"
}

var number = regexp.MustCompile(`\b\d+\b`)

// numbers rewrites the resourceVersions inside a Status message.
func (n *normalizer) numbers(msg string) string {
	return number.ReplaceAllStringFunc(msg, func(s string) string {
		if name, ok := n.rvName[s]; ok {
			return name
		}
		if v, err := strconv.ParseInt(s, 10, 64); err == nil && len(n.rvs) > 0 && v > n.rvs[0] {
			return n.plus(s)
		}
		return s
	})
}

// generic rewrites every string (substitutions, timestamps) of a value,
// returning a copy.
func (n *normalizer) generic(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[n.subst.Replace(k)] = n.generic(val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = n.generic(val)
		}
		return out
	case string:
		return n.str(x)
	}
	return v
}

func (n *normalizer) str(s string) string {
	if _, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return "<time>"
	}
	return n.subst.Replace(s)
}

var rvParam = regexp.MustCompile(`resourceVersion=(\d+)`)

// label is an exchange's step with its names and revisions normalized.
func (n *normalizer) label(step string) string {
	step = rvParam.ReplaceAllStringFunc(step, func(s string) string {
		rv := strings.TrimPrefix(s, "resourceVersion=")
		if name, ok := n.rvName[rv]; ok {
			return "resourceVersion=" + name
		}
		return s
	})
	if i := strings.Index(step, "continue="); i >= 0 {
		end := strings.IndexByte(step[i:], '&')
		if end < 0 {
			end = len(step) - i
		}
		step = step[:i] + "continue=<continue>" + step[i+end:]
	}
	return n.subst.Replace(step)
}

// diff lists the differences between two normalized values, one line per
// JSON path: "path: embedded=… real=…".
func diff(path string, a, b any, out *[]string) {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := map[string]bool{}
		for k := range x {
			keys[k] = true
		}
		for k := range y {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			av, aok := x[k]
			bv, bok := y[k]
			switch {
			case !aok:
				*out = append(*out, fmt.Sprintf("%s.%s: embedded=<absent> real=%s", path, k, show(bv)))
			case !bok:
				*out = append(*out, fmt.Sprintf("%s.%s: embedded=%s real=<absent>", path, k, show(av)))
			default:
				diff(path+"."+k, av, bv, out)
			}
		}
		return
	case []any:
		y, ok := b.([]any)
		if !ok {
			break
		}
		for i := range max(len(x), len(y)) {
			p := fmt.Sprintf("%s[%d]", path, i)
			switch {
			case i >= len(x):
				*out = append(*out, fmt.Sprintf("%s: embedded=<absent> real=%s", p, show(y[i])))
			case i >= len(y):
				*out = append(*out, fmt.Sprintf("%s: embedded=%s real=<absent>", p, show(x[i])))
			default:
				diff(p, x[i], y[i], out)
			}
		}
		return
	}
	if show(a) != show(b) {
		*out = append(*out, fmt.Sprintf("%s: embedded=%s real=%s", path, show(a), show(b)))
	}
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 400 {
		return string(b[:400]) + "…"
	}
	return string(b)
}

// sortManagedFields sorts the managedFields entries of md, without their
// times (see normalizer).
func sortManagedFields(md map[string]any) {
	entries, ok := md["managedFields"].([]any)
	if !ok {
		return
	}
	key := func(e any) string {
		m, _ := e.(map[string]any)
		var parts []string
		for _, f := range []string{"operation", "manager", "apiVersion", "subresource"} {
			v, _ := m[f].(string)
			parts = append(parts, v)
		}
		return strings.Join(parts, "\x00")
	}
	sorted := slices.Clone(entries)
	slices.SortStableFunc(sorted, func(a, b any) int { return strings.Compare(key(a), key(b)) })
	md["managedFields"] = sorted
}

// jsonPath returns the value at path in v (nil when absent).
func jsonPath(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

package manager

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// Checker is a health or readiness check: nil means healthy (ready).
// It is called for every probe request, with that request.
type Checker func(req *http.Request) error

// Ping is a Checker that always passes: the process answers HTTP.
func Ping(*http.Request) error { return nil }

type namedCheck struct {
	name  string
	check Checker
}

// checks is one probe endpoint's ordered set of named checks.
type checks struct {
	path string // "healthz" or "readyz"

	mu sync.Mutex // guards list
	// list keeps the order of registration; names are unique.
	list []namedCheck
}

func (c *checks) add(name string, check Checker) error {
	if name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("manager: %s check name %q must be non-empty and contain no '/'", c.path, name)
	}
	if check == nil {
		return fmt.Errorf("manager: %s check %q is nil", c.path, name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, nc := range c.list {
		if nc.name == name {
			return fmt.Errorf("manager: %s check %q already added", c.path, name)
		}
	}
	c.list = append(c.list, namedCheck{name, check})
	return nil
}

func (c *checks) snapshot() []namedCheck {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]namedCheck(nil), c.list...)
}

// ServeHTTP answers /<path> (every check) and /<path>/<name> (one check),
// as kube-apiserver's healthz: 200 "ok" when every check passes, else 500
// with one line per check; ?verbose lists the checks on success too;
// ?exclude=<name> (repeatable) skips checks.
func (c *checks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	list := c.snapshot()
	name := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/"+c.path), "/")
	if name != "" {
		for _, nc := range list {
			if nc.name == name {
				if err := nc.check(r); err != nil {
					http.Error(w, fmt.Sprintf("%s check failed: %v", name, err), http.StatusInternalServerError)
					return
				}
				fmt.Fprint(w, "ok")
				return
			}
		}
		http.Error(w, fmt.Sprintf("no %s check named %q", c.path, name), http.StatusNotFound)
		return
	}
	exclude := map[string]bool{}
	for _, e := range r.URL.Query()["exclude"] {
		exclude[e] = true
	}
	var b strings.Builder
	failed := false
	for _, nc := range list {
		if exclude[nc.name] {
			fmt.Fprintf(&b, "[+]%s excluded: ok\n", nc.name)
			continue
		}
		if err := nc.check(r); err != nil {
			failed = true
			fmt.Fprintf(&b, "[-]%s failed: %v\n", nc.name, err)
			continue
		}
		fmt.Fprintf(&b, "[+]%s ok\n", nc.name)
	}
	if failed {
		fmt.Fprintf(&b, "%s check failed\n", c.path)
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, b.String())
		return
	}
	if _, verbose := r.URL.Query()["verbose"]; verbose {
		fmt.Fprintf(&b, "%s check passed\n", c.path)
		fmt.Fprint(w, b.String())
		return
	}
	fmt.Fprint(w, "ok")
}

package reflector

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// storeRVs returns the resourceVersion of each store call of a recStore
// transcript: that of a Replace, of a Bookmark, or of the object of an
// Add, Update or Delete.
func storeRVs(calls []string) []string {
	rvs := make([]string, 0, len(calls))
	for _, c := range calls {
		verb, rest, _ := strings.Cut(c, " ")
		switch verb {
		case "Replace":
			rv, _, _ := strings.Cut(rest, " ")
			rvs = append(rvs, rv)
		case "Bookmark":
			rvs = append(rvs, rest)
		default:
			_, rv, _ := strings.Cut(rest, "@")
			rvs = append(rvs, rv)
		}
	}
	return rvs
}

// checkNeverBack fails the test if a comparable resourceVersion of rvs is
// older than a comparable one before it.
func checkNeverBack(t *testing.T, what string, rvs []string) {
	t.Helper()
	high := ""
	for i, rv := range rvs {
		c, err := resourceversion.CompareResourceVersion(rv, high)
		if high != "" && err == nil && c < 0 {
			t.Errorf("%s went back in time: %q at %d after %s (all: %q)", what, rv, i, high, rvs)
		}
		if _, err := resourceversion.CompareResourceVersion(rv, rv); err == nil && (high == "" || c > 0) {
			high = rv
		}
	}
}

// Across relists forced by 410 Gone, by a too large resourceVersion, by
// expired positions and amid failed requests, the store never sees a
// resourceVersion older than one it has seen, nor does
// LastSyncResourceVersion report one: every older list is refused (and
// reported with ErrStaleList) and retried after a backoff.
func TestResourceVersionNeverGoesBack(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     Options
		script   []reply
		requests []string
		store    []string
		stale    int
	}{{
		name: "list+watch",
		opts: Options{DisableWatchList: true},
		script: []reply{
			{verb: "list", list: podList("10", "", pod("a", "1"))},
			{verb: "watch", events: []Event[*corev1.Pod]{modified("a", "15"), added("b", "20"), errorEv(gone())}},
			// A lagging server answers the consistent relist.
			{verb: "list", list: podList("12", "", pod("a", "1"))},
			{verb: "list", err: internal()},
			{verb: "list", list: podList("19", "", pod("a", "15"))},
			{verb: "list", list: podList("25", "", pod("a", "15"), pod("b", "20"), pod("c", "25"))},
			{verb: "watch", err: tooLarge()},
			{verb: "list", list: podList("22", "", pod("a", "15"))},
			{verb: "list", list: podList("25", "", pod("a", "15"), pod("b", "20"), pod("c", "25"))},
			{verb: "watch", err: tooMany(1)},
			{verb: "watch", events: []Event[*corev1.Pod]{bookmarkEv("30"), errorEv(gone())}},
			{verb: "list", list: podList("30", "", pod("a", "15"), pod("b", "20"), pod("c", "25"))},
		},
		requests: []string{listRV0, watchFrom("10"), listRVNew, listRVNew, listRVNew, listRVNew, watchFrom("25"),
			listRVNew, listRVNew, watchFrom("25"), watchFrom("25"), listRVNew, watchFrom("30")},
		store: []string{"Replace 10 [a@1]", "Update a@15", "Add b@20", "Replace 25 [a@15,b@20,c@25]",
			"Replace 25 [a@15,b@20,c@25]", "Bookmark 30", "Replace 30 [a@15,b@20,c@25]"},
		stale: 3,
	}, {
		name: "streaming lists",
		script: []reply{
			{verb: "watch", events: []Event[*corev1.Pod]{added("a", "5"), initialEnd("10"), modified("a", "20"), errorEv(gone())}},
			{verb: "watch", events: []Event[*corev1.Pod]{added("a", "5"), initialEnd("12")}},
			{verb: "watch", err: internal()},
			{verb: "watch", events: []Event[*corev1.Pod]{added("a", "20"), initialEnd("21"), errorEv(tooLarge())}},
			{verb: "watch", events: []Event[*corev1.Pod]{added("a", "20"), initialEnd("15")}},
			{verb: "watch", events: []Event[*corev1.Pod]{added("a", "20"), initialEnd("21")}},
		},
		requests: []string{watchList, watchList, watchList, watchList, watchList, watchList},
		store:    []string{"Replace 10 [a@5]", "Update a@20", "Replace 21 [a@20]", "Replace 21 [a@20]"},
		stale:    2,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeLW(t, tc.script...)
				st := &recStore{}
				m := &metricsRec{}
				opts := tc.opts
				opts.Metrics = m
				var positions []string
				run(t, f, st, opts, func(r *Reflector[*corev1.Pod]) {
					st.onReplace = func(string) { positions = append(positions, r.LastSyncResourceVersion()) }
					st.onEvent = func() { positions = append(positions, r.LastSyncResourceVersion()) }
				})
				if got := f.transcript(); !slices.Equal(got, tc.requests) {
					t.Errorf("requests:\n got %q\nwant %q", got, tc.requests)
				}
				got := st.transcript()
				if !slices.Equal(got, tc.store) {
					t.Errorf("store calls:\n got %q\nwant %q", got, tc.store)
				}
				checkNeverBack(t, "store", storeRVs(got))
				checkNeverBack(t, "LastSyncResourceVersion during store calls", positions)
				checkNeverBack(t, "ObserveResourceVersion", m.rvs)
				if n := count(m.listErrors, ErrStaleList); n != tc.stale {
					t.Errorf("%d lists reported with ErrStaleList, want %d (errors %v)", n, tc.stale, m.listErrors)
				}
			})
		})
	}
}

// A list refused as older leaves everything as it was: the store is not
// called, the position stays, and the error wraps ErrStaleList and says
// both versions.
func TestStaleListError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeLW(t,
			reply{verb: "list", list: podList("100", "", pod("a", "1"))},
			reply{verb: "watch", err: tooLarge()},
			reply{verb: "list", list: podList("99", "", pod("a", "1"))},
			reply{verb: "list", err: internal()},
		)
		st := &recStore{}
		m := &metricsRec{}
		_, r := run(t, f, st, Options{DisableWatchList: true, Metrics: m}, nil)
		if got, want := st.transcript(), []string{"Replace 100 [a@1]"}; !slices.Equal(got, want) {
			t.Errorf("store calls %q, want %q", got, want)
		}
		if rv := r.LastSyncResourceVersion(); rv != "100" {
			t.Errorf("LastSyncResourceVersion %q, want 100", rv)
		}
		var stale error
		for _, err := range m.listErrors {
			if errors.Is(err, ErrStaleList) {
				stale = err
			}
		}
		if stale == nil || !strings.Contains(stale.Error(), "99") || !strings.Contains(stale.Error(), "100") {
			t.Errorf("stale list error %v, want one wrapping ErrStaleList naming 99 and 100", stale)
		}
		if m.listItems != 1 {
			t.Errorf("ObserveList counted %d items handed to the store, want 1 (the refused list's are not)", m.listItems)
		}
	})
}

func TestCheckNotOlder(t *testing.T) {
	for _, tc := range []struct {
		seen, rv string
		stale    bool
	}{
		{"", "5", false},    // nothing seen yet: the first list
		{"", "", false},     // idem
		{"100", "99", true}, // older
		{"100", "100", false},
		{"100", "101", false},
		{"99", "100", false}, // compared as numbers, not strings
		{"100", "", false},   // not comparable: accepted as before
		{"100", "abc", false},
		{"abc", "100", false},
		{"100", "0", false}, // "0" is not a version (any), not comparable
		{"100", "099", false},
	} {
		r, err := New[*corev1.Pod](newFakeLW(t), &recStore{}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		r.lastRV = tc.seen
		err = r.checkNotOlder(tc.rv)
		if (err != nil) != tc.stale || (err != nil && !errors.Is(err, ErrStaleList)) {
			t.Errorf("seen %q, list at %q: %v, want stale=%v", tc.seen, tc.rv, err, tc.stale)
		}
	}
}

func TestStoreRVs(t *testing.T) {
	got := storeRVs([]string{"Replace 10 [a@1,b@2]", "Add c@11", "Update c@12", "Bookmark 13", "Delete c@14"})
	if want := []string{"10", "11", "12", "13", "14"}; !slices.Equal(got, want) {
		t.Errorf("storeRVs: %q, want %q", got, want)
	}
}

package trigger

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// obj is an Object.
type obj struct{ rv string }

func (o *obj) GetNamespace() string       { return "ns" }
func (o *obj) GetName() string            { return "a" }
func (o *obj) GetResourceVersion() string { return o.rv }

func upd(rv string) Cause { return Cause{Type: Update, Object: &obj{rv}} }

// describe renders a record: "total=N Type:rv … [Type=n …]", kept causes
// oldest first, then the counts.
func describe(r *Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "total=%d", r.Total())
	for i := range r.Len() {
		c := r.At(i)
		fmt.Fprintf(&b, " %s", c.Type)
		if c.Object != nil {
			fmt.Fprintf(&b, ":%s", c.Object.GetResourceVersion())
		}
	}
	b.WriteString(" [")
	sep := ""
	for t, n := range r.Counts() {
		fmt.Fprintf(&b, "%s%s=%d", sep, t, n)
		sep = " "
	}
	b.WriteString("]")
	return b.String()
}

func TestRecord(t *testing.T) {
	tests := []struct {
		name string
		run  func(r *Record)
		want string
	}{{
		name: "empty",
		run:  func(*Record) {},
		want: "total=0 []",
	}, {
		name: "adds keep the last four and count all",
		run: func(r *Record) {
			for i := range 6 {
				r.Add(upd(fmt.Sprint(i + 1)))
			}
		},
		want: "total=6 Update:3 Update:4 Update:5 Update:6 [Update=6]",
	}, {
		name: "a tally counts without keeping",
		run: func(r *Record) {
			r.Add(upd("1"))
			r.Tally(Unknown)
			r.Tally(Type(200)) // out of range: ignored
		},
		want: "total=2 Update:1 [Unknown=1 Update=1]",
	}, {
		name: "merge appends the other's kept causes and adds its counts",
		run: func(r *Record) {
			r.Add(Cause{Type: Error})
			var o Record
			o.Add(upd("7"))
			o.Tally(Unknown)
			r.Merge(&o)
		},
		want: "total=3 Error Update:7 [Unknown=1 Update=1 Error=1]",
	}, {
		name: "merge past the bound keeps the newest",
		run: func(r *Record) {
			r.Add(upd("1"))
			r.Add(upd("2"))
			var o Record
			for i := range 3 {
				o.Add(Cause{Type: Resync, Object: &obj{fmt.Sprint(10 + i)}})
			}
			r.Merge(&o)
		},
		want: "total=5 Update:2 Resync:10 Resync:11 Resync:12 [Update=2 Resync=3]",
	}, {
		name: "reset empties",
		run: func(r *Record) {
			r.Add(upd("1"))
			r.Reset()
		},
		want: "total=0 []",
	}, {
		name: "move hands the content over and empties the source",
		run: func(r *Record) {
			var src Record
			for i := range 5 {
				src.Add(upd(fmt.Sprint(i + 1)))
			}
			r.Add(Cause{Type: Delete}) // replaced
			src.MoveTo(r)
			if src.Total() != 0 || src.Len() != 0 {
				panic("source not emptied: " + describe(&src))
			}
			r.Add(upd("9")) // the ring continues after a move
		},
		want: "total=6 Update:3 Update:4 Update:5 Update:9 [Update=6]",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r Record
			tc.run(&r)
			if got := describe(&r); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestRecordNoAllocs(t *testing.T) {
	var r, dst Record
	c := upd("1")
	c.Time = time.Unix(1, 0)
	allocs := testing.AllocsPerRun(1000, func() {
		r.Add(c)
		r.Tally(Unknown)
		r.MoveTo(&dst)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per Add+Tally+MoveTo", allocs)
	}
}

func TestAtOutOfRange(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("At(0) of an empty record did not panic")
		}
	}()
	var r Record
	r.At(0)
}

func TestTypeString(t *testing.T) {
	for typ := range numTypes {
		if s := typ.String(); s == "" || strings.HasPrefix(s, "trigger.Type(") {
			t.Errorf("type %d has no name", typ)
		}
	}
	if s := Type(200).String(); s != "trigger.Type(200)" {
		t.Errorf("String of an unknown type: %q", s)
	}
}

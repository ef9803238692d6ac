package apiext

import (
	"reflect"
	"sync"
	"testing"
	"time"
)

func TestColumns(t *testing.T) {
	crd := validCRD(t)
	cols, err := NewColumns(crd.Spec.Versions[0].AdditionalPrinterColumns)
	if err != nil {
		t.Fatal(err)
	}
	defs := cols.Definitions()
	var names []string
	for _, d := range defs {
		names = append(names, d.Name)
	}
	if want := []string{"Name", "Schedule", "Suspend", "Last Schedule", "Age", "Replicas"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("columns %v, want %v", names, want)
	}
	if defs[0].Format != "name" || defs[5].Priority != 1 || defs[5].Description != "replicas wanted" ||
		defs[1].Description != "Custom resource definition column (in JSONPath format): .spec.schedule" {
		t.Fatalf("definitions %+v", defs)
	}
	now := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		obj  string
		want []any
	}{
		{"full", `{"metadata":{"name":"c1","creationTimestamp":"2026-01-02T09:55:00Z"},"spec":{"schedule":"*/1 * * * *","suspend":false,"replicas":3},"status":{"lastScheduleTime":"2026-01-01T10:00:00Z"}}`,
			[]any{"c1", "*/1 * * * *", false, "24h", "5m", int64(3)}},
		{"missing values", `{"metadata":{"name":"c2"}}`,
			[]any{"c2", nil, nil, nil, nil, nil}},
		{"wrong types", `{"metadata":{"name":"c3","creationTimestamp":"yesterday"},"spec":{"schedule":5,"suspend":"no","replicas":2.7}}`,
			[]any{"c3", "5", nil, nil, "<invalid>", int64(2)}},
		{"object in string column", `{"metadata":{"name":"c4"},"spec":{"schedule":{"a":1}}}`,
			[]any{"c4", `{"a":1}`, nil, nil, nil, nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := cols.Cells(mustObj(t, tt.obj), now)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("cells %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestDefaultColumnsAndConcurrency(t *testing.T) {
	cols, err := NewColumns(nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cols.Definitions(); len(d) != 2 || d[1].Name != "Age" || d[1].Type != "date" || d[1].Description == "" {
		t.Fatalf("default columns %+v", d)
	}
	obj := mustObj(t, `{"metadata":{"name":"x","creationTimestamp":"2026-01-01T00:00:00Z"}}`)
	now := time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if c := cols.Cells(obj, now); c[1] != "2d" {
					t.Errorf("cell %v", c[1])
					return
				}
			}
		})
	}
	wg.Wait()
	if _, err := NewColumns([]CustomResourceColumnDefinition{{Name: "Bad", Type: "string", JSONPath: ".spec[?("}}); err == nil {
		t.Fatal("bad JSONPath accepted")
	}
}

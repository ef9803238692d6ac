package apiext

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/util/jsonpath"
)

// Columns evaluates the printer columns of one custom resource version for
// Table output (kubectl get), as kube-apiserver's CRD table convertor does:
// a Name column, then the additionalPrinterColumns, or a single Age column
// (.metadata.creationTimestamp, type date) when the version declares none.
//
// Cells follow kube-apiserver: string columns print the JSONPath result with
// client-go's jsonpath printer, integer/number/boolean columns return the
// typed JSON value (nil when the value has another type), date columns
// return the human-readable age ("5m", "3d") of an RFC 3339 timestamp, or
// "<invalid>"; a missing value is nil (kubectl shows <none>).
//
// A Columns is safe for concurrent use.
type Columns struct {
	defs  []metav1.TableColumnDefinition
	types []string // of the custom columns, in order

	// mu guards paths: client-go's JSONPath keeps evaluation state.
	mu    sync.Mutex
	paths []*jsonpath.JSONPath
}

// DefaultColumns is what kube-apiserver serves for a version without
// additionalPrinterColumns: Age.
func DefaultColumns() []CustomResourceColumnDefinition {
	return []CustomResourceColumnDefinition{{
		Name:        "Age",
		Type:        "date",
		Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"],
		JSONPath:    ".metadata.creationTimestamp",
	}}
}

// NewColumns compiles cols (DefaultColumns when empty). It fails on a
// JSONPath client-go cannot parse.
func NewColumns(cols []CustomResourceColumnDefinition) (*Columns, error) {
	if len(cols) == 0 {
		cols = DefaultColumns()
	}
	md := metav1.ObjectMeta{}.SwaggerDoc()
	c := &Columns{
		defs: []metav1.TableColumnDefinition{{Name: "Name", Type: "string", Format: "name", Description: md["name"]}},
	}
	for _, col := range cols {
		p := jsonpath.New(col.Name)
		if err := p.Parse(fmt.Sprintf("{%s}", col.JSONPath)); err != nil {
			return nil, fmt.Errorf("apiext: unrecognized column definition %q: %w", col.JSONPath, err)
		}
		p.AllowMissingKeys(true)
		desc := col.Description
		if desc == "" {
			desc = fmt.Sprintf("Custom resource definition column (in JSONPath format): %s", col.JSONPath)
		}
		c.paths = append(c.paths, p)
		c.types = append(c.types, col.Type)
		c.defs = append(c.defs, metav1.TableColumnDefinition{
			Name: col.Name, Type: col.Type, Format: col.Format, Description: desc, Priority: col.Priority,
		})
	}
	return c, nil
}

// Definitions returns the column definitions (Name first). The caller must
// not modify the result.
func (c *Columns) Definitions() []metav1.TableColumnDefinition { return c.defs }

// Cells returns one Table row's cells for obj: its metadata.name, then one
// cell per column. now is the reference time for date columns.
func (c *Columns) Cells(obj map[string]any, now time.Time) []any {
	cells := make([]any, 1, 1+len(c.paths))
	name := ""
	if md, ok := obj["metadata"].(map[string]any); ok {
		name, _ = md["name"].(string)
	}
	cells[0] = name
	c.mu.Lock()
	defer c.mu.Unlock()
	var buf bytes.Buffer
	for i, p := range c.paths {
		results, err := p.FindResults(obj)
		if err != nil || len(results) == 0 || len(results[0]) == 0 {
			cells = append(cells, nil)
			continue
		}
		value := results[0][0].Interface()
		if c.types[i] == "string" {
			buf.Reset()
			if err := p.PrintResults(&buf, []reflect.Value{reflect.ValueOf(value)}); err == nil {
				cells = append(cells, buf.String())
			} else {
				cells = append(cells, nil)
			}
			continue
		}
		cells = append(cells, cell(c.types[i], value, now))
	}
	return cells
}

func cell(typ string, value any, now time.Time) any {
	if value == nil {
		return nil
	}
	switch typ {
	case "integer":
		switch t := value.(type) {
		case int64:
			return t
		case int:
			return int64(t)
		case float64:
			return int64(t)
		case json.Number:
			if i, err := t.Int64(); err == nil {
				return i
			}
		}
	case "number":
		switch t := value.(type) {
		case int64:
			return float64(t)
		case int:
			return float64(t)
		case float64:
			return t
		case json.Number:
			if f, err := t.Float64(); err == nil {
				return f
			}
		}
	case "boolean":
		if b, ok := value.(bool); ok {
			return b
		}
	case "string":
		if s, ok := value.(string); ok {
			return s
		}
	case "date":
		if s, ok := value.(string); ok {
			var ts metav1.Time
			if err := ts.UnmarshalQueryParameter(s); err != nil {
				return "<invalid>"
			}
			if ts.IsZero() {
				return "<unknown>"
			}
			return duration.HumanDuration(now.Sub(ts.Time))
		}
	}
	return nil
}

package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"kloop.dev/kloop/apiserver/internal/jsontree"
)

// Objects are handled as JSON maps (map[string]any with int64 and float64
// numbers, as apimachinery's unstructured): package jsontree reads, writes,
// compares, decodes and encodes them; what follows is about Kubernetes
// objects in that form.

func defaultInt(m map[string]any, key string, v int64) {
	if _, ok := m[key]; !ok {
		m[key] = v
	}
}

// meta returns the metadata map of o, creating it if needed.
func meta(o map[string]any) map[string]any {
	m, ok := o["metadata"].(map[string]any)
	if !ok {
		m = map[string]any{}
		o["metadata"] = m
	}
	return m
}

// age formats the time since an RFC 3339 timestamp as kubectl does.
func age(ts string, now time.Time) string {
	t, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// decodeMap decodes a JSON object, numbers as int64 or float64.
func decodeMap(b []byte) (map[string]any, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return nil, fmt.Errorf("expected a JSON object")
	}
	if m, ok := jsontree.Decode(b); ok {
		return m, nil
	}
	var m map[string]any
	if err := utiljson.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("expected a JSON object, got null")
	}
	return m, nil
}

// fromMap converts a JSON map into a Go value.
func fromMap(m map[string]any, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, into)
}

// toMap converts a Go value into a JSON map by encoding it.
func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeMap(b)
}

func formatRV(rv int64) string { return strconv.FormatInt(rv, 10) }

// parseRV parses a resourceVersion; "" is 0.
func parseRV(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err == nil && v > math.MaxInt64 {
		err = fmt.Errorf("strconv.ParseUint: parsing %q: value out of range", s)
	}
	if err != nil {
		// kube-apiserver's versioner's wording.
		return 0, field.Invalid(field.NewPath("resourceVersion"), s, err.Error())
	}
	return int64(v), nil
}

package apiserver

import (
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// The bounds on the work a patch may ask for. A patch is small (the body
// is at most Options.MaxRequestBytes) but may ask for much more work than
// its size: a JSON patch of 2 KB that copies an array into itself 24 times
// would build gigabytes; a strategic merge patch of a few bytes that
// merges into a list of thousands of elements costs seconds (the merge
// compares elements pairwise).
const (
	// maxJSONPatchOperations caps the operations of a JSON patch, as
	// kube-apiserver (its patch handler's maxJSONPatchOperations): more
	// is a 413.
	maxJSONPatchOperations = 10000
	// maxJSONPatchCopyBytes bounds the bytes that the copy operations of a
	// JSON patch add in all, as kube-apiserver (its JSONPatchMaxCopyBytes,
	// 3 MiB, which it sets as json-patch's AccumulatedCopySizeLimit): past
	// it, the patch fails (422).
	maxJSONPatchCopyBytes = 3 << 20
	// maxStrategicMergeWork bounds the work of a strategic merge patch,
	// which kube-apiserver does not bound: the sum, over the lists the
	// patch merges into lists of the object (merge lists and
	// $setElementOrder lists), of the square of the two lengths' sum.
	// strategicpatch's list merges are quadratic, at 50 to 300 ns per unit:
	// the bound keeps a patch under a second, and takes lists of about
	// 1,400 elements. Past it, a 413.
	maxStrategicMergeWork = 1 << 21
)

// tooManyJSONPatchOperations is kube-apiserver's 413 for a JSON patch of
// n operations, more than the cap.
func tooManyJSONPatchOperations(n int) error {
	return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, n))
}

// checkStrategicMergeWork refuses (413) a strategic merge patch of the
// object orig whose list merges would cost more than the bound.
func checkStrategicMergeWork(patch, orig map[string]any, schema strategicpatch.LookupPatchMeta) error {
	if w := strategicMergeWork(patch, orig, schema); w > maxStrategicMergeWork {
		return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
			"The allowed maximum list merge work of a strategic merge patch is %d, got more than %d (each list of the patch merged into a list of the object counts the square of their lengths' sum)",
			maxStrategicMergeWork, w))
	}
	return nil
}

// strategicMergeWork is the work strategicpatch does merging the patch
// into orig (see maxStrategicMergeWork), following its decisions: a list
// merges into the object's only where the object has a list at the same
// key and the field's patch strategy is merge (a list of maps then merges
// each element into the object's element of the same merge key), and a
// $setElementOrder list orders the object's list. Other lists replace the
// object's, and the deletion directives take linear time. It stops
// counting past the bound.
func strategicMergeWork(patch, orig map[string]any, schema strategicpatch.LookupPatchMeta) int64 {
	var w int64
	for k, pv := range patch {
		if w > maxStrategicMergeWork {
			break
		}
		if field, ok := strings.CutPrefix(k, "$setElementOrder/"); ok {
			ol, ok1 := orig[field].([]any)
			pl, ok2 := pv.([]any)
			if ok1 && ok2 {
				w += square(len(pl) + len(ol))
			}
			continue
		}
		if strings.HasPrefix(k, "$") || schema == nil {
			continue
		}
		switch p := pv.(type) {
		case map[string]any:
			o, ok := orig[k].(map[string]any)
			if !ok {
				continue
			}
			if sub, _, err := schema.LookupPatchMetadataForStruct(k); err == nil {
				w += strategicMergeWork(p, o, sub)
			}
		case []any:
			o, ok := orig[k].([]any)
			if !ok {
				continue
			}
			sub, meta, err := schema.LookupPatchMetadataForSlice(k)
			if err != nil || !slices.Contains(meta.GetPatchStrategies(), "merge") {
				continue
			}
			w += square(len(p) + len(o))
			if key := meta.GetPatchMergeKey(); key != "" && w <= maxStrategicMergeWork {
				w += mergedElementsWork(p, o, key, sub)
			}
		}
	}
	return w
}

// mergedElementsWork is the work of merging the maps of the patch list p
// into the maps of the object's list o with the same merge key.
func mergedElementsWork(p, o []any, key string, schema strategicpatch.LookupPatchMeta) int64 {
	byKey := map[any]map[string]any{}
	for _, e := range o {
		if m, ok := e.(map[string]any); ok {
			if v, ok := mergeKeyValue(m[key]); ok {
				byKey[v] = m
			}
		}
	}
	var w int64
	for _, e := range p {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		if v, ok := mergeKeyValue(m[key]); ok && byKey[v] != nil {
			w += strategicMergeWork(m, byKey[v], schema)
		}
		if w > maxStrategicMergeWork {
			break
		}
	}
	return w
}

// mergeKeyValue returns a merge key's value as a map key, if it can be one.
func mergeKeyValue(v any) (any, bool) {
	switch v.(type) {
	case string, int64, float64, bool:
		return v, true
	}
	return nil, false
}

func square(n int) int64 { return int64(n) * int64(n) }

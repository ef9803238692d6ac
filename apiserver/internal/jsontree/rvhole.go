package jsontree

import (
	"fmt"
)

// rvKey opens the member a resourceVersion hole takes.
const rvKey = `"resourceVersion":"`

// EncodeRVHole encodes obj exactly as json.Marshal does once its
// metadata.resourceVersion is set (keys sorted, values as json.Marshal
// encodes them: see Append), but without it: hole is where
// `"resourceVersion":"<rv>"` goes (separators are in place), for
// FillRVHole. obj's metadata must be a map without resourceVersion.
func EncodeRVHole(obj map[string]any) (pre []byte, hole int, err error) {
	m, ok := obj["metadata"].(map[string]any)
	if !ok {
		return nil, 0, fmt.Errorf("metadata is %T, not an object", obj["metadata"])
	}
	var arr [16]string
	keys := appendSortedKeys(arr[:0], obj)
	b := make([]byte, 0, 512)
	b = append(b, '{')
	for i, key := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, key)
		b = append(b, ':')
		if key != "metadata" {
			if b, err = Append(b, obj[key]); err != nil {
				return nil, 0, err
			}
			continue
		}
		b = append(b, '{')
		var marr [24]string
		mkeys := appendSortedKeys(append(marr[:0], "resourceVersion"), m)
		for j, mk := range mkeys {
			if j > 0 {
				b = append(b, ',')
			}
			if mk == "resourceVersion" {
				hole = len(b)
				continue
			}
			b = AppendString(b, mk)
			b = append(b, ':')
			if b, err = Append(b, m[mk]); err != nil {
				return nil, 0, err
			}
		}
		b = append(b, '}')
	}
	return append(b, '}'), hole, nil
}

// FillRVHole returns a new encoding: pre, from EncodeRVHole, with rv as the
// resourceVersion in its hole. rv is written as it is: it must need no
// escaping (a decimal revision).
func FillRVHole(pre []byte, hole int, rv string) []byte {
	data := make([]byte, 0, len(pre)+len(rvKey)+len(rv)+1)
	return append(append(append(append(append(data, pre[:hole]...), rvKey...), rv...), '"'), pre[hole:]...)
}

package apiserver

import (
	"encoding/json"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"kloop.dev/kloop/apiserver/storage"
)

// tableOptions are the Table parameters of a request.
type tableOptions struct {
	includeObject metav1.IncludeObjectPolicy
}

// wantsTable reports whether the request w answers negotiated a
// meta.k8s.io Table (as kubectl get asks), and its parameters.
func wantsTable(w http.ResponseWriter, r *http.Request) (tableOptions, bool) {
	if answerOf(w).as != "Table" {
		return tableOptions{}, false
	}
	t := tableOptions{includeObject: metav1.IncludeMetadata}
	q := r.URL.Query()
	switch p := metav1.IncludeObjectPolicy(q.Get("includeObject")); p {
	case metav1.IncludeNone, metav1.IncludeObject, metav1.IncludeMetadata:
		t.includeObject = p
	}
	return t, true
}

// table converts stored objects into a Table.
func (s *Server) table(k *kind, objs []*storage.Object, lm metav1.ListMeta, t tableOptions) (*metav1.Table, error) {
	now := s.opts.Now()
	tbl := &metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}, ListMeta: lm, Rows: []metav1.TableRow{}}
	cols := k.tableColumns()
	tbl.ColumnDefinitions = make([]metav1.TableColumnDefinition, 0, len(cols)+1)
	if k.crd == nil && !k.tableNoName {
		tbl.ColumnDefinitions = append(tbl.ColumnDefinitions, metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]})
	}
	for _, c := range cols {
		tbl.ColumnDefinitions = append(tbl.ColumnDefinitions, c.def)
	}
	for _, o := range objs {
		obj, err := s.served(k, o)
		if err != nil {
			return nil, err
		}
		var row metav1.TableRow
		switch {
		case k.crd != nil:
			if row.Cells, err = k.crd.cells(obj); err != nil {
				return nil, err
			}
		case k.cells != nil:
			name := o.Name
			if k.nameCell != nil {
				name = k.nameCell(obj)
			}
			row.Cells = append([]any{name}, k.cells(obj, now)...)
		default:
			row.Cells = make([]any, 0, len(cols)+1)
			if !k.tableNoName {
				row.Cells = append(row.Cells, o.Name)
			}
			for _, c := range cols {
				row.Cells = append(row.Cells, c.value(obj, now))
			}
		}
		switch t.includeObject {
		case metav1.IncludeObject:
			b, err := json.Marshal(obj)
			if err != nil {
				return nil, err
			}
			row.Object = runtime.RawExtension{Raw: b}
		case metav1.IncludeMetadata:
			md := obj["metadata"]
			if k.internalMeta != nil {
				m, _ := runtime.DeepCopyJSONValue(md).(map[string]any)
				k.internalMeta(m)
				md = m
			}
			b, err := json.Marshal(map[string]any{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": md})
			if err != nil {
				return nil, err
			}
			row.Object = runtime.RawExtension{Raw: b}
		}
		tbl.Rows = append(tbl.Rows, row)
	}
	return tbl, nil
}

// tableColumns returns the columns after Name: the kind's, with Age appended
// when the kind does not place it. Custom resources use their CRD's columns.
func (k *kind) tableColumns() []column {
	if k.crd != nil {
		defs := k.crd.columnDefinitions()
		out := make([]column, 0, len(defs))
		for _, d := range defs {
			out = append(out, column{def: d})
		}
		return out
	}
	for _, c := range k.columns {
		if c.def.Name == "Age" || c.def.Name == "Created At" {
			return k.columns
		}
	}
	if k.tableNoName {
		return k.columns // events have no Age column
	}
	return append(k.columns[:len(k.columns):len(k.columns)], ageColumn())
}

func (s *Server) writeTable(w http.ResponseWriter, k *kind, objs []*storage.Object, lm metav1.ListMeta, t tableOptions) error {
	tbl, err := s.table(k, objs, lm, t)
	if err != nil {
		return err
	}
	b, err := json.Marshal(tbl)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, b) // kube-apiserver serves Tables as plain application/json
	return nil
}

// metadataOnly is a request's metadata-only form (client-go's metadata
// client): as=PartialObjectMetadata or as=PartialObjectMetadataList
// (g=meta.k8s.io, v=v1 or v1beta1) in the Accept clause it negotiated.
type metadataOnly struct {
	list    bool   // PartialObjectMetadataList
	version string // of meta.k8s.io
}

// wantsMetadata reports whether the request w answers negotiated
// metadata-only objects.
func wantsMetadata(w http.ResponseWriter) (metadataOnly, bool) {
	switch a := answerOf(w); a.as {
	case "PartialObjectMetadata":
		return metadataOnly{version: a.asVersion}, true
	case "PartialObjectMetadataList":
		return metadataOnly{list: true, version: a.asVersion}, true
	}
	return metadataOnly{}, false
}

// apiVersion is meta.k8s.io's, in the version asked for.
func (m metadataOnly) apiVersion() string { return "meta.k8s.io/" + m.version }

// of is obj (served form) as a PartialObjectMetadata.
func (m metadataOnly) of(obj map[string]any) map[string]any {
	return map[string]any{"apiVersion": m.apiVersion(), "kind": "PartialObjectMetadata", "metadata": obj["metadata"]}
}

// notAcceptable is kube-apiserver's 406 for a metadata-only form that does
// not fit what is read (one object, or a list).
func (m metadataOnly) notAcceptable(k *kind, list bool) error {
	pkg := "unstructured"
	if k.crd == nil {
		pkg = internalPackage(k.gvr.Group)
	}
	typ := "*" + pkg + "." + k.kind
	if list {
		typ += "List"
		return notAcceptableError("you requested PartialObjectMetadata, but the requested object is a list (" + typ + ")")
	}
	return notAcceptableError("you requested PartialObjectMetadataList, but the requested object is not a list (" + typ + ")")
}

func notAcceptableError(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable, Message: msg,
	}}
}

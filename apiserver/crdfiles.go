package apiserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"kloop.dev/kloop/apiserver/storage"
)

// CRDDocument is a CustomResourceDefinition ReadCRDs read, and where.
type CRDDocument struct {
	// Source is "file, document n", for errors about the CRD.
	Source string
	CRD    *unstructured.Unstructured
}

// maxCRDFile bounds what ReadCRDs reads of one file.
const maxCRDFile = 16 << 20

// ReadCRDs reads the CustomResourceDefinitions in paths, as envtest's
// CRDDirectoryPaths does: each path is a file or a directory (its files
// ending in .yaml, .yml or .json, not its subdirectories, in name order);
// a file holds YAML documents separated by "---", or JSON. Documents of
// other kinds, and empty ones, are skipped. A path that does not exist, a
// file past 16 MiB, a document that does not decode, or a CRD of
// apiextensions.k8s.io/v1beta1 (no longer served) is an error that names
// the file and the document's place in it.
func ReadCRDs(paths ...string) ([]CRDDocument, error) {
	var out []CRDDocument
	for _, p := range paths {
		files, err := crdFiles(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			crds, err := readCRDFile(f)
			if err != nil {
				return nil, err
			}
			out = append(out, crds...)
		}
	}
	return out, nil
}

// crdFiles lists the files of path (itself, or a directory's).
func crdFiles(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("CRD path: %w", err)
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("CRD path: %w", err)
	}
	var files []string
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".yaml", ".yml", ".json":
			if !e.IsDir() {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
	}
	slices.Sort(files)
	return files, nil
}

// readCRDFile reads the CRDs of one file.
func readCRDFile(path string) ([]CRDDocument, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("CRD file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCRDFile+1))
	if err != nil {
		return nil, fmt.Errorf("CRD file %s: %w", path, err)
	}
	if len(data) > maxCRDFile {
		return nil, fmt.Errorf("CRD file %s: larger than %d bytes", path, maxCRDFile)
	}
	var out []CRDDocument
	rd := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for doc := 1; ; doc++ {
		var m map[string]any
		err := rd.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("CRD file %s, document %d: %w", path, doc, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetKind() != "CustomResourceDefinition" {
			continue
		}
		switch u.GetAPIVersion() {
		case apiextensionsv1.GroupName + "/v1":
		case apiextensionsv1.GroupName + "/v1beta1":
			return nil, fmt.Errorf("CRD file %s, document %d (%s): apiextensions.k8s.io/v1beta1 is not served since Kubernetes 1.22; write it as apiextensions.k8s.io/v1", path, doc, u.GetName())
		default:
			return nil, fmt.Errorf("CRD file %s, document %d (%s): apiVersion %q is not apiextensions.k8s.io/v1", path, doc, u.GetName(), u.GetAPIVersion())
		}
		out = append(out, CRDDocument{Source: fmt.Sprintf("%s, document %d", path, doc), CRD: u})
	}
}

// installCRDs creates the CRDs of Options.CRDPaths, each established when
// its create returns. A CRD a data directory holds already is updated to
// the file's, as envtest's CRD installation does.
func (s *Server) installCRDs(paths []string) error {
	crds, err := ReadCRDs(paths...)
	if err != nil {
		return fmt.Errorf("apiserver: %w", err)
	}
	k := s.reg.get(crdGVR)
	for _, d := range crds {
		crd, src := d.CRD, d.Source
		body, err := crd.MarshalJSON()
		if err != nil {
			return fmt.Errorf("apiserver: CRD %s (%s): %w", crd.GetName(), src, err)
		}
		wo := &writeOpts{fieldValidation: "Strict"}
		obj, err := s.decodeStored(k, body, wo)
		if _, gerr := s.store.Get(k.storageResource, "", crd.GetName()); err == nil && gerr == nil {
			ri := requestInfo{gv: crdGVR.GroupVersion(), resource: crdGVR.Resource, name: crd.GetName()}
			_, err = s.update(k, ri, wo, func(cur *storage.Object) (map[string]any, error) {
				next, err := s.decodeStored(k, body, wo)
				if err == nil {
					meta(next)["resourceVersion"] = formatRV(cur.ResourceVersion)
				}
				return next, err
			})
		} else if err == nil {
			_, err = s.create(k, obj, "", wo)
		}
		if err != nil {
			return fmt.Errorf("apiserver: CRD %s (%s): %w", crd.GetName(), src, err)
		}
	}
	return nil
}

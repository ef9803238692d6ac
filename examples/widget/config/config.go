// Package config embeds what controller-gen generates for the Widget
// operator: its CustomResourceDefinitions (crd/bases) and the ClusterRole
// its RBAC markers give it (rbac/role.yaml), for a program or a test to
// install.
package config

import (
	"embed"
	"fmt"
	"io/fs"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

//go:embed crd/bases/*.yaml rbac/role.yaml
var files embed.FS

// CRDs returns the CustomResourceDefinitions of config/crd/bases.
func CRDs() ([]*unstructured.Unstructured, error) {
	paths, err := fs.Glob(files, "crd/bases/*.yaml")
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(paths))
	for _, p := range paths {
		data, err := files.ReadFile(p)
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &u.Object); err != nil {
			return nil, fmt.Errorf("config: %s: %w", p, err)
		}
		out = append(out, u)
	}
	return out, nil
}

// Role returns the ClusterRole of config/rbac/role.yaml (named
// manager-role).
func Role() (*rbacv1.ClusterRole, error) {
	data, err := files.ReadFile("rbac/role.yaml")
	if err != nil {
		return nil, err
	}
	var r rbacv1.ClusterRole
	if err := yaml.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("config: rbac/role.yaml: %w", err)
	}
	return &r, nil
}

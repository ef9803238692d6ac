package apiservertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	rbacv1 "k8s.io/api/rbac/v1"

	"kloop.dev/kloop/apiserver/internal/rbac"
)

// aggregateClusterRoles gives the ClusterRoles with an aggregationRule
// (kube-apiserver's admin, edit and view) the rules they select, once, as
// kube-controller-manager's aggregation controller would have by the time a
// cluster is ready: the real pair runs no controller-manager, and without
// it those roles allow nothing. Later aggregation is not done.
func (s *realServer) aggregateClusterRoles(ctx context.Context) error {
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: s.tlsConfig(), DisableKeepAlives: true}}
	const path = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
	call := func(method, p string, body, out any) error {
		var rd io.Reader
		if body != nil {
			b, err := json.Marshal(body)
			if err != nil {
				return err
			}
			rd = bytes.NewReader(b)
		}
		req, err := http.NewRequestWithContext(ctx, method, s.url+p, rd)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+s.token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s %s: %s: %s", method, p, resp.Status, bytes.TrimSpace(data))
		}
		return json.Unmarshal(data, out)
	}
	for range 10 {
		var list rbacv1.ClusterRoleList
		if err := call(http.MethodGet, path, nil, &list); err != nil {
			return err
		}
		all := make([]*rbacv1.ClusterRole, len(list.Items))
		for i := range list.Items {
			all[i] = &list.Items[i]
		}
		changed := false
		for _, cr := range all {
			rules, ok, err := rbac.Aggregate(cr, all)
			if !ok || err != nil || rbac.RulesEqual(rules, cr.Rules) {
				continue
			}
			next := cr.DeepCopy()
			next.Rules = rules
			if err := call(http.MethodPut, path+"/"+cr.Name, next, &rbacv1.ClusterRole{}); err != nil {
				return err
			}
			changed = true
		}
		if !changed {
			return nil
		}
	}
	return fmt.Errorf("the aggregated ClusterRoles do not settle")
}

package apiserver

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"runtime"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// Version is what the server's /version reports: the Kubernetes API it
// follows (the k8s.io/api release it is built on), marked -kloop.
func Version() version.Info { return serverVersion }

// serverVersion is Version's answer; never written.
var serverVersion = version.Info{
	Major: "1", Minor: "37", GitVersion: "v1.37.2-kloop", GitCommit: "", GitTreeState: "clean",
	BuildDate: "2026-01-01T00:00:00Z", GoVersion: runtime.Version(), Compiler: runtime.Compiler,
	Platform: runtime.GOOS + "/" + runtime.GOARCH,
}

func (s *Server) serveVersion(w http.ResponseWriter, _ *http.Request) {
	writeObject(w, http.StatusOK, serverVersion)
}

const aggregatedContentType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// wantsAggregated reports whether the client accepts aggregated discovery v2.
func wantsAggregated(r *http.Request) bool {
	for _, mt := range strings.Split(r.Header.Get("Accept"), ",") {
		if strings.Contains(mt, "g=apidiscovery.k8s.io") && strings.Contains(mt, "as=APIGroupDiscoveryList") && strings.Contains(mt, "v=v2") && !strings.Contains(mt, "v=v2beta1") {
			return true
		}
	}
	return false
}

// serveAPIVersions serves /api: the legacy core group.
func (s *Server) serveAPIVersions(w http.ResponseWriter, r *http.Request) {
	if wantsAggregated(r) {
		s.writeAggregated(w, true)
		return
	}
	if !s.negotiateDiscovery(w, r) {
		return
	}
	writeObject(w, http.StatusOK, &metav1.APIVersions{
		TypeMeta:                   metav1.TypeMeta{Kind: "APIVersions"},
		Versions:                   []string{"v1"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}},
	})
}

// serveAPIGroupList serves /apis.
func (s *Server) serveAPIGroupList(w http.ResponseWriter, r *http.Request) {
	if wantsAggregated(r) {
		s.writeAggregated(w, false)
		return
	}
	if !s.negotiateDiscovery(w, r) {
		return
	}
	list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{}}
	for _, g := range s.reg.groupVersions() {
		if g.group != "" {
			list.Groups = append(list.Groups, apiGroup(g))
		}
	}
	writeObject(w, http.StatusOK, list)
}

func apiGroup(g groupVersions) metav1.APIGroup {
	out := metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: g.group}
	for _, v := range g.versions {
		out.Versions = append(out.Versions, metav1.GroupVersionForDiscovery{GroupVersion: g.group + "/" + v, Version: v})
	}
	out.PreferredVersion = out.Versions[0]
	return out
}

// serveAPIGroup serves /apis/<group>.
func (s *Server) serveAPIGroup(w http.ResponseWriter, r *http.Request, group string) {
	for _, g := range s.reg.groupVersions() {
		if g.group == group && group != "" {
			if s.negotiateDiscovery(w, r) {
				writeObject(w, http.StatusOK, apiGroup(g))
			}
			return
		}
	}
	s.notFound(w, r)
}

// serveResourceList serves /api/v1 and /apis/<group>/<version>.
func (s *Server) serveResourceList(w http.ResponseWriter, r *http.Request, gv schema.GroupVersion) {
	list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String()}
	for _, k := range s.reg.all() {
		if k.gvr.GroupVersion() != gv {
			continue
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: k.gvr.Resource, SingularName: k.singular, Namespaced: k.namespaced, Kind: k.kind,
			Verbs: k.verbs, ShortNames: k.shortNames, Categories: k.categories,
			StorageVersionHash: k.storageVersionHash(),
		})
		if k.status {
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: k.gvr.Resource + "/status", Namespaced: k.namespaced, Kind: k.kind, Verbs: statusVerbs})
		}
		if k.approval {
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: k.gvr.Resource + "/approval", Namespaced: k.namespaced, Kind: k.kind, Verbs: statusVerbs})
		}
		if k.scale != nil {
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: k.gvr.Resource + "/scale", Namespaced: k.namespaced, Group: "autoscaling", Version: "v1", Kind: "Scale", Verbs: statusVerbs})
		}
	}
	if list.APIResources == nil {
		s.notFound(w, r)
		return
	}
	if s.negotiateDiscovery(w, r) {
		writeObject(w, http.StatusOK, list)
	}
}

// writeAggregated serves aggregated discovery: for /api the core group, for
// /apis all the others.
func (s *Server) writeAggregated(w http.ResponseWriter, core bool) {
	list := &apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"}, Items: []apidiscoveryv2.APIGroupDiscovery{}}
	kinds := s.reg.all()
	for _, g := range s.reg.groupVersions() {
		if (g.group == "") != core {
			continue
		}
		gd := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: g.group}}
		for _, v := range g.versions {
			vd := apidiscoveryv2.APIVersionDiscovery{Version: v, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
			for _, k := range kinds {
				if k.gvr.Group != g.group || k.gvr.Version != v {
					continue
				}
				scope := apidiscoveryv2.ScopeCluster
				if k.namespaced {
					scope = apidiscoveryv2.ScopeNamespace
				}
				rd := apidiscoveryv2.APIResourceDiscovery{
					Resource: k.gvr.Resource, ResponseKind: &metav1.GroupVersionKind{Group: g.group, Version: v, Kind: k.kind},
					Scope: scope, SingularResource: k.singular, Verbs: k.verbs, ShortNames: k.shortNames, Categories: k.categories,
				}
				if k.approval {
					rd.Subresources = append(rd.Subresources, apidiscoveryv2.APISubresourceDiscovery{Subresource: "approval", ResponseKind: rd.ResponseKind, Verbs: statusVerbs})
				}
				if k.status {
					rd.Subresources = append(rd.Subresources, apidiscoveryv2.APISubresourceDiscovery{Subresource: "status", ResponseKind: rd.ResponseKind, Verbs: statusVerbs})
				}
				if k.scale != nil {
					rd.Subresources = append(rd.Subresources, apidiscoveryv2.APISubresourceDiscovery{Subresource: "scale", ResponseKind: &metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}, Verbs: statusVerbs})
				}
				vd.Resources = append(vd.Resources, rd)
			}
			gd.Versions = append(gd.Versions, vd)
		}
		list.Items = append(list.Items, gd)
	}
	w.Header().Set("Content-Type", aggregatedContentType)
	writeObjectKeepType(w, list)
}

// writeObjectKeepType writes v as JSON without overriding the Content-Type already set.
func writeObjectKeepType(w http.ResponseWriter, v any) {
	ct := w.Header().Get("Content-Type")
	rec := &headerKeeper{ResponseWriter: w, ct: ct}
	writeObject(rec, http.StatusOK, v)
}

type headerKeeper struct {
	http.ResponseWriter
	ct string
}

func (h *headerKeeper) WriteHeader(code int) {
	h.ResponseWriter.Header().Set("Content-Type", h.ct)
	h.ResponseWriter.WriteHeader(code)
}

// storageVersionHash is kube-apiserver's discovery hash of the version a
// resource is stored at: base64 of the first 8 bytes of the SHA-256 of
// "group/version/kind".
func (k *kind) storageVersionHash() string {
	gv, err := schema.ParseGroupVersion(k.storageVersion)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256([]byte(gv.Group + "/" + gv.Version + "/" + k.kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}

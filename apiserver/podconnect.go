package apiserver

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"kloop.dev/kloop/apiserver/internal/jsontree"
)

// podGVR is core/v1 pods.
var podGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// servePodConnect answers a pod's log, exec, attach or portforward (the
// subresources kube-apiserver proxies to the pod's kubelet, for kubectl
// logs, exec, attach and port-forward) as
// kube-apiserver does when no kubelet can be reached — the embedded server
// runs none: the pod and the container are checked, then a pod no node runs
// has no log (204) and cannot be exec'd into (400 "does not have a host
// assigned"), and a pod bound to a node finds no such node (the 404 kube's
// node lookup gives when no Node object exists).
func (s *Server) servePodConnect(w http.ResponseWriter, r *http.Request, k *kind, ri requestInfo) error {
	switch {
	case ri.subresource == "log" && r.Method != http.MethodGet,
		ri.subresource != "log" && r.Method != http.MethodGet && r.Method != http.MethodPost:
		return methodNotAllowed()
	}
	q := r.URL.Query()
	if ri.subresource == "log" {
		for _, p := range []string{"sinceSeconds", "tailLines", "limitBytes"} {
			if q.Has(p) {
				if _, err := strconv.ParseInt(q.Get(p), 10, 64); err != nil {
					return badRequest("%v", err)
				}
			}
		}
	}
	if err := k.checkKey(ri.namespace, ri.name); err != nil {
		return err
	}
	o, err := s.store.Get(k.storageResource, ri.namespace, ri.name)
	if err != nil {
		return err
	}
	pod, err := decodeMap(o.Data)
	if err != nil {
		return err
	}
	if ri.subresource != "portforward" {
		if err := podContainer(pod, ri.name, q.Get("container")); err != nil {
			return err
		}
	}
	node := jsontree.Str(pod, "spec", "nodeName")
	switch {
	case node != "":
		return apierrors.NewNotFound(podGVR.GroupResource(), node)
	case ri.subresource == "log":
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	return badRequest("pod %s does not have a host assigned", ri.name)
}

// podContainer checks the container a log or exec names, as kube-apiserver
// does: one of the pod's; none names the only one.
func podContainer(pod map[string]any, podName, container string) error {
	names := func(field string) []string {
		var out []string
		cs, _ := jsontree.Get(pod, "spec", field).([]any)
		for _, c := range cs {
			out = append(out, jsontree.Str(c, "name"))
		}
		return out
	}
	containers, inits, ephemeral := names("containers"), names("initContainers"), names("ephemeralContainers")
	if container == "" {
		if len(containers) == 1 {
			return nil
		}
		msg := fmt.Sprintf("a container name must be specified for pod %s, choose one of: [%s]", podName, strings.Join(containers, " "))
		if len(inits) > 0 {
			msg += fmt.Sprintf(" or one of the init containers: [%s]", strings.Join(inits, " "))
		}
		if len(ephemeral) > 0 {
			msg += fmt.Sprintf(" or one of the ephemeral containers: [%s]", strings.Join(ephemeral, " "))
		}
		return badRequest("%s", msg)
	}
	for _, list := range [][]string{containers, inits, ephemeral} {
		for _, n := range list {
			if n == container {
				return nil
			}
		}
	}
	return badRequest("container %s is not valid for pod %s", container, podName)
}

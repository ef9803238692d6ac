package apiserver

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/apiserver/storage"
)

var (
	allVerbs     = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	statusVerbs  = []string{"get", "patch", "update"}
	namespaceGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	serviceGVR   = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	crdGVR       = schema.GroupVersionResource{Group: apiextensionsv1.GroupName, Version: "v1", Resource: "customresourcedefinitions"}
)

// builtinKinds returns the kinds served from the start: the rows of the
// table of built-in kinds (kinds.go).
func builtinKinds() []*kind {
	defs := tableKinds()
	out := make([]*kind, 0, len(defs))
	for i := range defs {
		if k := defs[i].build(); k != nil {
			finishKind(k)
			out = append(out, k)
		}
	}
	return out
}

// The behaviour of the core/v1, apps/v1, coordination.k8s.io and
// apiextensions.k8s.io kinds served before the table grew (the setup of
// their rows in kinds.go).

func setupNamespace(ns *kind) {
	ns.nameValidation = apivalidation.ValidateNamespaceName
	ns.columns = []column{{def("Status", "string", "The status of the namespace"), func(o map[string]any, _ time.Time) any { return jsontree.Str(o, "status", "phase") }}}
	ns.strategyCreate = func(o map[string]any) {
		if jsontree.Get(o, "spec", "finalizers") == nil {
			jsontree.Set(o, []any{"kubernetes"}, "spec", "finalizers")
		}
	}
	ns.prepareCreate = func(o map[string]any) {
		o["status"] = map[string]any{"phase": "Active"}
		if u := (&unstructured.Unstructured{Object: o}); u.GetName() != "" {
			lbls := u.GetLabels()
			if lbls == nil {
				lbls = map[string]string{}
			}
			lbls["kubernetes.io/metadata.name"] = u.GetName()
			u.SetLabels(lbls)
		}
	}
	ns.terminate = func(o map[string]any) { jsontree.Set(o, "Terminating", "status", "phase") }
	ns.deleteContent = (*Server).deleteNamespaceContent
	ns.waitsForContent = func(s *Server, name string) bool { return !s.namespaceEmpty(name) }
	ns.validate = validateNamespace
	ns.returnsDeleted = true
}

func setupConfigMap(cm *kind) {
	cm.columns = []column{{def("Data", "string", corev1.ConfigMap{}.SwaggerDoc()["data"]), func(o map[string]any, _ time.Time) any {
		return int64(jsontree.Len(o, "data") + jsontree.Len(o, "binaryData"))
	}}}
	cm.validate, cm.validateUpdate = validateConfigMap, validateConfigMapUpdate
}

func setupSecret(secret *kind) {
	secret.columns = []column{
		{def("Type", "string", corev1.Secret{}.SwaggerDoc()["type"]), func(o map[string]any, _ time.Time) any { return jsontree.Str(o, "type") }},
		{def("Data", "string", corev1.Secret{}.SwaggerDoc()["data"]), func(o map[string]any, _ time.Time) any { return int64(jsontree.Len(o, "data")) }},
	}
	secret.prepareCreate = func(o map[string]any) {
		if jsontree.Str(o, "type") == "" {
			o["type"] = "Opaque"
		}
	}
	secret.normalize = mergeStringData
	secret.validate, secret.validateUpdate, secret.warnings = validateSecret, validateSecretUpdate, secretWarnings
	secret.defaults = typedDefaults(func(s *corev1.Secret) {
		if s.Type == "" {
			s.Type = corev1.SecretTypeOpaque
		}
	})
}

func setupCoreEvent(ev *kind) {
	ev.columns, ev.tableNoName = eventColumns(false), true
	ev.validate = validateCoreEvent // events.k8s.io/v1 writes are not validated yet
}

func setupEventV1(evv1 *kind) {
	evv1.fieldAliases = map[string]string{"reportingController": "reportingComponent"}
	for _, f := range []string{"kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"} {
		evv1.fieldAliases["regarding."+f] = "involvedObject." + f
	}
	evv1.columns, evv1.tableNoName = eventColumns(true), true
}

func setupServiceAccount(sa *kind) {
	sa.columns = []column{{def("Secrets", "string", "Number of secrets"), func(o map[string]any, _ time.Time) any { return int64(jsontree.Len(o, "secrets")) }}}
	sa.returnsDeleted = true
}

// podFields are the fields pods select on.
func podFields() []selectableField {
	return []selectableField{
		{name: "spec.nodeName", path: []string{"spec", "nodeName"}},
		{name: "spec.restartPolicy", path: []string{"spec", "restartPolicy"}},
		{name: "spec.schedulerName", path: []string{"spec", "schedulerName"}},
		{name: "spec.serviceAccountName", path: []string{"spec", "serviceAccountName"}},
		{name: "spec.hostNetwork", path: []string{"spec", "hostNetwork"}, absent: "false"},
		{name: "status.phase", path: []string{"status", "phase"}},
		{name: "status.podIP", path: []string{"status", "podIP"}},
		{name: "status.nominatedNodeName", path: []string{"status", "nominatedNodeName"}},
	}
}

func setupPod(pod *kind) {
	pod.prepareCreate = nil // the strategy sets the status (strategyCreate)
	pod.columns = podColumns()
	pod.strategyCreate, pod.carryOver = preparePodCreate, carryOverPod
	pod.admit = (*Server).admitPodPriority
	pod.validate = func(o map[string]any) field.ErrorList {
		cs, _ := jsontree.Get(o, "spec", "containers").([]any)
		if len(cs) == 0 {
			return field.ErrorList{field.Required(field.NewPath("spec", "containers"), "")}
		}
		var errs field.ErrorList
		for i, c := range cs {
			cm, _ := c.(map[string]any)
			p := field.NewPath("spec", "containers").Index(i)
			if jsontree.Str(cm, "name") == "" {
				errs = append(errs, field.Required(p.Child("name"), ""))
			} else if slices.ContainsFunc(cs[:i], func(o any) bool { return jsontree.Str(o, "name") == jsontree.Str(cm, "name") }) {
				errs = append(errs, field.Duplicate(p.Child("name"), jsontree.Str(cm, "name")))
			}
			if jsontree.Str(cm, "image") == "" {
				errs = append(errs, field.Required(p.Child("image"), ""))
			}
			errs = append(errs, oneOf(p.Child("imagePullPolicy"), jsontree.Str(cm, "imagePullPolicy"), "Always", "IfNotPresent", "Never")...)
		}
		errs = append(errs, oneOf(field.NewPath("spec", "restartPolicy"), jsontree.Str(o, "spec", "restartPolicy"), "Always", "OnFailure", "Never")...)
		errs = append(errs, oneOf(field.NewPath("spec", "dnsPolicy"), jsontree.Str(o, "spec", "dnsPolicy"), "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")...)
		return errs
	}
	pod.gracePeriod = podGracePeriod
	pod.statusKeepsMeta = []string{"ownerReferences"}
	pod.returnsDeleted = true
	pod.defaults = typedDefaults(defaultPod)
}

func setupService(svc *kind) {
	svc.nameValidation = apivalidation.NameIsDNSLabel // RFC 1123 labels (kube-apiserver 1.37)
	svc.columns = serviceColumns()
	svc.carryOver = func(obj, old map[string]any) {
		// An update that leaves the cluster IP out keeps it.
		if jsontree.Str(obj, "spec", "clusterIP") == "" && jsontree.Str(old, "spec", "clusterIP") != "" {
			jsontree.Set(obj, jsontree.Get(old, "spec", "clusterIP"), "spec", "clusterIP")
			if ips := jsontree.Get(old, "spec", "clusterIPs"); ips != nil {
				jsontree.Set(obj, ips, "spec", "clusterIPs")
			}
		}
	}
	svc.validateUpdate = func(obj, old map[string]any) field.ErrorList {
		if newIP, oldIP := jsontree.Str(obj, "spec", "clusterIP"), jsontree.Str(old, "spec", "clusterIP"); newIP != oldIP {
			// kube-apiserver first makes clusterIPs follow clusterIP, then
			// refuses the change of the list.
			return field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), []string{newIP}, "may not change once set")}
		}
		return nil
	}
	svc.admit, svc.releaseAdmitted = (*Server).allocateServiceIP, (*Server).releaseServiceIP
	svc.restore = (*Server).restoreServiceIPs
	svc.afterDelete = func(s *Server, o *storage.Object) {
		if obj, err := decodeMap(o.Data); err == nil {
			s.releaseServiceIP(obj)
		}
	}
	svc.prepareCreate = func(o map[string]any) {
		o["status"] = map[string]any{"loadBalancer": map[string]any{}}
		if spec, _ := o["spec"].(map[string]any); spec != nil {
			if jsontree.Str(spec, "type") == "" {
				spec["type"] = "ClusterIP"
			}
			if jsontree.Str(spec, "sessionAffinity") == "" {
				spec["sessionAffinity"] = "None"
			}
		}
	}
	svc.validate = validateService
	svc.returnsDeleted = true
	svc.defaults = typedDefaults(defaultService)
}

func setupDeployment(deploy *kind) {
	deploy.columns = []column{
		{def("Ready", "string", "Number of the pod with ready state"), func(o map[string]any, _ time.Time) any {
			return fmt.Sprintf("%d/%d", jsontree.Int(o, "status", "readyReplicas"), jsontree.Int(o, "spec", "replicas"))
		}},
		{def("Up-to-date", "string", appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"]), func(o map[string]any, _ time.Time) any { return jsontree.Int(o, "status", "updatedReplicas") }},
		{def("Available", "string", appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"]), func(o map[string]any, _ time.Time) any { return jsontree.Int(o, "status", "availableReplicas") }},
		ageColumn(),
		{metav1.TableColumnDefinition{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."}, func(o map[string]any, _ time.Time) any { return containerField(o, "name") }},
		{metav1.TableColumnDefinition{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."}, func(o map[string]any, _ time.Time) any { return containerField(o, "image") }},
		{metav1.TableColumnDefinition{Name: "Selector", Type: "string", Priority: 1, Description: appsv1.DeploymentSpec{}.SwaggerDoc()["selector"]}, func(o map[string]any, _ time.Time) any { return selectorString(o) }},
	}
	deploy.prepareCreate = func(o map[string]any) {
		o["status"] = map[string]any{}
		spec, _ := o["spec"].(map[string]any)
		if spec == nil {
			return
		}
		defaultInt(spec, "replicas", 1)
		defaultInt(spec, "revisionHistoryLimit", 10)
		defaultInt(spec, "progressDeadlineSeconds", 600)
		if _, ok := spec["strategy"]; !ok {
			spec["strategy"] = map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": "25%", "maxUnavailable": "25%"}}
		}
	}
	deploy.validate = typedValidation(validateDeployment)
	deploy.statusKeepsMeta = []string{"labels"}
	deploy.annotationsMoveGeneration = true
	deploy.defaults = typedDefaults(defaultDeployment)
}

func setupReplicaSet(rs *kind) {
	rs.columns = []column{
		{def("Desired", "integer", appsv1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]), func(o map[string]any, _ time.Time) any { return jsontree.Int(o, "spec", "replicas") }},
		{def("Current", "integer", appsv1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]), func(o map[string]any, _ time.Time) any { return jsontree.Int(o, "status", "replicas") }},
		{def("Ready", "integer", appsv1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]), func(o map[string]any, _ time.Time) any { return jsontree.Int(o, "status", "readyReplicas") }},
		ageColumn(),
		{metav1.TableColumnDefinition{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."}, func(o map[string]any, _ time.Time) any { return containerField(o, "name") }},
		{metav1.TableColumnDefinition{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."}, func(o map[string]any, _ time.Time) any { return containerField(o, "image") }},
		{metav1.TableColumnDefinition{Name: "Selector", Type: "string", Priority: 1, Description: appsv1.ReplicaSetSpec{}.SwaggerDoc()["selector"]}, func(o map[string]any, _ time.Time) any { return selectorString(o) }},
	}
	rs.prepareCreate = func(o map[string]any) {
		o["status"] = map[string]any{"replicas": int64(0)}
		if spec, _ := o["spec"].(map[string]any); spec != nil {
			defaultInt(spec, "replicas", 1)
		}
	}
	rs.validate = typedValidation(validateReplicaSet)
	rs.defaults = typedDefaults(func(rs *appsv1.ReplicaSet) {
		if rs.Spec.Replicas == nil {
			rs.Spec.Replicas = ptrTo[int32](1)
		}
		defaultPodSpec(&rs.Spec.Template.Spec)
	})
}

func setupLease(lease *kind) {
	lease.columns = []column{{def("Holder", "string", coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]), func(o map[string]any, _ time.Time) any { return jsontree.Str(o, "spec", "holderIdentity") }}}
	lease.validate = validateLease
	lease.strategyCreate = func(o map[string]any) { dropLeaseStrategy(o, nil) }
	lease.carryOver = dropLeaseStrategy
	lease.requireResourceVersion = true
}

func setupCRD(crd *kind) {
	crd.defaults = typedDefaults(apiextensionsv1.SetObjectDefaults_CustomResourceDefinition)
	crdKind(crd)
	crd.columns = []column{{def("Created At", "date", "When the CRD was created"), func(o map[string]any, _ time.Time) any { return jsontree.Str(o, "metadata", "creationTimestamp") }}}
	crd.requireResourceVersion = true
}

func def(name, typ, desc string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Description: desc}
}

func coreEventFields() []selectableField {
	var out []selectableField
	for _, f := range []string{"kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"} {
		out = append(out, selectableField{name: "involvedObject." + f, path: []string{"involvedObject", f}})
	}
	return append(out,
		selectableField{name: "reason", path: []string{"reason"}},
		selectableField{name: "reportingComponent", path: []string{"reportingComponent"}},
		selectableField{name: "source", path: []string{"source", "component"}},
		selectableField{name: "type", path: []string{"type"}},
	)
}

// eventColumns are kube-apiserver's event columns (its printer's wide
// set, with the name last and no leading Name column). They read the core
// form: events.k8s.io objects are converted first.
func eventColumns(v1 bool) []column {
	core := func(f func(e *corev1.Event, now time.Time) any) func(map[string]any, time.Time) any {
		return func(o map[string]any, now time.Time) any {
			if v1 {
				c, err := eventToCore(runtime.DeepCopyJSON(o))
				if err != nil {
					return nil
				}
				o = c
			}
			var e corev1.Event
			if err := fromMap(o, &e); err != nil {
				return nil
			}
			return f(&e, now)
		}
	}
	since := func(t time.Time, now time.Time) string {
		if t.IsZero() {
			return "<unknown>"
		}
		return duration.HumanDuration(now.Sub(t))
	}
	first := func(e *corev1.Event, now time.Time) string {
		if e.FirstTimestamp.IsZero() {
			return since(e.EventTime.Time, now)
		}
		return since(e.FirstTimestamp.Time, now)
	}
	doc := corev1.Event{}.SwaggerDoc()
	return []column{
		{def("Last Seen", "string", doc["lastTimestamp"]), core(func(e *corev1.Event, now time.Time) any {
			switch {
			case e.Series != nil:
				return since(e.Series.LastObservedTime.Time, now)
			case e.LastTimestamp.IsZero():
				return first(e, now)
			}
			return since(e.LastTimestamp.Time, now)
		})},
		{def("Type", "string", doc["type"]), core(func(e *corev1.Event, _ time.Time) any { return e.Type })},
		{def("Reason", "string", doc["reason"]), core(func(e *corev1.Event, _ time.Time) any { return e.Reason })},
		{def("Object", "string", doc["involvedObject"]), core(func(e *corev1.Event, _ time.Time) any {
			if e.InvolvedObject.Name == "" {
				return strings.ToLower(e.InvolvedObject.Kind)
			}
			return strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name
		})},
		{metav1.TableColumnDefinition{Name: "Subobject", Type: "string", Priority: 1, Description: corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]}, core(func(e *corev1.Event, _ time.Time) any { return e.InvolvedObject.FieldPath })},
		{metav1.TableColumnDefinition{Name: "Source", Type: "string", Priority: 1, Description: doc["source"]}, core(func(e *corev1.Event, _ time.Time) any {
			component, instance := e.Source.Component, e.Source.Host
			if component == "" {
				component = e.ReportingController
			}
			if instance == "" {
				instance = e.ReportingInstance
			}
			if instance == "" {
				return component
			}
			return component + ", " + instance
		})},
		{def("Message", "string", doc["message"]), core(func(e *corev1.Event, _ time.Time) any { return strings.TrimSpace(e.Message) })},
		{metav1.TableColumnDefinition{Name: "First Seen", Type: "string", Priority: 1, Description: doc["firstTimestamp"]}, core(func(e *corev1.Event, now time.Time) any { return first(e, now) })},
		{metav1.TableColumnDefinition{Name: "Count", Type: "string", Priority: 1, Description: doc["count"]}, core(func(e *corev1.Event, _ time.Time) any {
			switch {
			case e.Series != nil:
				return int64(e.Series.Count)
			case e.Count == 0:
				return int64(1)
			}
			return int64(e.Count)
		})},
		{metav1.TableColumnDefinition{Name: "Name", Type: "string", Priority: 1, Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}, core(func(e *corev1.Event, _ time.Time) any { return e.Name })},
	}
}

func podColumns() []column {
	return []column{
		{def("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."), func(o map[string]any, _ time.Time) any {
			cs, _ := jsontree.Get(o, "spec", "containers").([]any)
			ready := 0
			statuses, _ := jsontree.Get(o, "status", "containerStatuses").([]any)
			for _, s := range statuses {
				if b, _ := jsontree.Get(s, "ready").(bool); b {
					ready++
				}
			}
			return fmt.Sprintf("%d/%d", ready, len(cs))
		}},
		{def("Status", "string", "The aggregate status of the containers in this pod."), func(o map[string]any, _ time.Time) any {
			if jsontree.Str(o, "metadata", "deletionTimestamp") != "" {
				return "Terminating"
			}
			if r := jsontree.Str(o, "status", "reason"); r != "" {
				return r
			}
			return jsontree.Str(o, "status", "phase")
		}},
		{def("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."), func(o map[string]any, _ time.Time) any {
			var n int64
			statuses, _ := jsontree.Get(o, "status", "containerStatuses").([]any)
			for _, s := range statuses {
				n += jsontree.Int(s, "restartCount")
			}
			return strconv.FormatInt(n, 10)
		}},
		ageColumn(),
		{metav1.TableColumnDefinition{Name: "IP", Type: "string", Priority: 1, Description: corev1.PodStatus{}.SwaggerDoc()["podIP"]}, func(o map[string]any, _ time.Time) any { return orNone(jsontree.Str(o, "status", "podIP")) }},
		{metav1.TableColumnDefinition{Name: "Node", Type: "string", Priority: 1, Description: corev1.PodSpec{}.SwaggerDoc()["nodeName"]}, func(o map[string]any, _ time.Time) any { return orNone(jsontree.Str(o, "spec", "nodeName")) }},
		{metav1.TableColumnDefinition{Name: "Nominated Node", Type: "string", Priority: 1, Description: corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"]}, func(o map[string]any, _ time.Time) any {
			return orNone(jsontree.Str(o, "status", "nominatedNodeName"))
		}},
		{metav1.TableColumnDefinition{Name: "Readiness Gates", Type: "string", Priority: 1, Description: corev1.PodSpec{}.SwaggerDoc()["readinessGates"]}, func(o map[string]any, _ time.Time) any {
			gates, _ := jsontree.Get(o, "spec", "readinessGates").([]any)
			if len(gates) == 0 {
				return "<none>"
			}
			conds, _ := jsontree.Get(o, "status", "conditions").([]any)
			met := 0
			for _, g := range gates {
				for _, c := range conds {
					if jsontree.Str(c, "type") == jsontree.Str(g, "conditionType") && jsontree.Str(c, "status") == "True" {
						met++
						break
					}
				}
			}
			return fmt.Sprintf("%d/%d", met, len(gates))
		}},
	}
}

func serviceColumns() []column {
	return []column{
		{def("Type", "string", corev1.ServiceSpec{}.SwaggerDoc()["type"]), func(o map[string]any, _ time.Time) any { return jsontree.Str(o, "spec", "type") }},
		{def("Cluster-IP", "string", corev1.ServiceSpec{}.SwaggerDoc()["clusterIP"]), func(o map[string]any, _ time.Time) any { return orNone(jsontree.Str(o, "spec", "clusterIP")) }},
		{def("External-IP", "string", corev1.ServiceSpec{}.SwaggerDoc()["externalIPs"]), func(o map[string]any, _ time.Time) any {
			ips, _ := jsontree.Get(o, "spec", "externalIPs").([]any)
			var s []string
			for _, ip := range ips {
				s = append(s, fmt.Sprint(ip))
			}
			return orNone(strings.Join(s, ","))
		}},
		{def("Port(s)", "string", corev1.ServiceSpec{}.SwaggerDoc()["ports"]), func(o map[string]any, _ time.Time) any {
			ports, _ := jsontree.Get(o, "spec", "ports").([]any)
			var s []string
			for _, p := range ports {
				proto := jsontree.Str(p, "protocol")
				if proto == "" {
					proto = "TCP"
				}
				entry := fmt.Sprintf("%d/%s", jsontree.Int(p, "port"), proto)
				if np := jsontree.Int(p, "nodePort"); np != 0 {
					entry = fmt.Sprintf("%d:%d/%s", jsontree.Int(p, "port"), np, proto)
				}
				s = append(s, entry)
			}
			return orNone(strings.Join(s, ","))
		}},
		ageColumn(),
		{metav1.TableColumnDefinition{Name: "Selector", Type: "string", Priority: 1, Description: corev1.ServiceSpec{}.SwaggerDoc()["selector"]}, func(o map[string]any, _ time.Time) any {
			sel, _ := jsontree.Get(o, "spec", "selector").(map[string]any)
			if len(sel) == 0 {
				return "<none>"
			}
			set := labels.Set{}
			for k, v := range sel {
				set[k], _ = v.(string)
			}
			return labels.SelectorFromSet(set).String()
		}},
	}
}

// ageColumn is the Age column; Table output appends it to the columns of
// kinds that do not place it themselves.
func ageColumn() column {
	return column{def("Age", "string", metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]), func(o map[string]any, now time.Time) any {
		return age(jsontree.Str(o, "metadata", "creationTimestamp"), now)
	}}
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// containerField joins a field of the pod template's containers.
func containerField(o map[string]any, f string) string {
	cs, _ := jsontree.Get(o, "spec", "template", "spec", "containers").([]any)
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, jsontree.Str(c, f))
	}
	return strings.Join(out, ",")
}

// selectorString renders spec.selector as kubectl does.
func selectorString(o map[string]any) string {
	sel, ok := jsontree.Get(o, "spec", "selector").(map[string]any)
	if !ok {
		return "<none>"
	}
	ls := &metav1.LabelSelector{}
	if err := fromMap(sel, ls); err != nil {
		return "<invalid>"
	}
	s, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return "<invalid>"
	}
	return s.String()
}

// mergeStringData folds a Secret's write-only stringData into data (base64,
// overriding data's keys), as kube-apiserver's conversion does on every write;
// stringData is never stored or returned.
func mergeStringData(o map[string]any) (map[string]any, error) {
	sd, ok := o["stringData"].(map[string]any)
	delete(o, "stringData")
	if !ok || len(sd) == 0 {
		return o, nil
	}
	data, _ := o["data"].(map[string]any)
	if data == nil {
		data = make(map[string]any, len(sd))
	}
	for k, v := range sd {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("stringData[%q]: must be a string", k)
		}
		data[k] = base64.StdEncoding.EncodeToString([]byte(s))
	}
	o["data"] = data
	return o, nil
}

// oneOf is kube-apiserver's Unsupported value error for a defaulted enum
// field whose value is not one of supported (nothing when it is, or empty).
func oneOf(p *field.Path, v string, supported ...string) field.ErrorList {
	if v == "" || slices.Contains(supported, v) {
		return nil
	}
	return field.ErrorList{field.NotSupported(p, v, supported)}
}

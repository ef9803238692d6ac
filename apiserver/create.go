package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/apiserver/storage"
)

func (s *Server) serveCreate(w http.ResponseWriter, r *http.Request, k *kind, ns string, q url.Values) (err error) {
	wo, body, err := s.writeRequest(r, k, q, "Create")
	defer warnOnError(w, wo, &err)
	if err != nil {
		return err
	}
	obj, err := s.decodeBody(k, body, wo)
	if err != nil {
		return err
	}
	if k.review != nil {
		req := runtime.DeepCopyJSON(obj) // as sent, for its managedFields
		out, err := k.review(&reviewCall{s: s, user: wo.user, ns: ns, obj: obj})
		if err != nil {
			return err
		}
		if jsontree.Len(out, "spec") > 0 {
			// Reviews that answer with the request (access and token
			// reviews) carry its managedFields, as kube-apiserver's do.
			if mf, ok := meta(s.manageFields(k, "", req, nil, wo))["managedFields"]; ok {
				meta(out)["managedFields"] = mf
			}
		}
		writeWarnings(w, wo)
		writeObject(w, http.StatusCreated, out)
		return nil
	}
	if obj, err = s.toStorage(k, obj); err != nil {
		return err
	}
	if err := s.checkWrite(k, wo, ns, obj, nil); err != nil {
		return err
	}
	o, err := s.create(k, obj, ns, wo)
	if err != nil {
		return err
	}
	return s.respond(w, k, o, http.StatusCreated, wo)
}

// create stores a new object (stored form) of k in namespace ns.
func (s *Server) create(k *kind, obj map[string]any, ns string, wo *writeOpts) (*storage.Object, error) {
	u := &unstructured.Unstructured{Object: obj}
	m := meta(obj)
	if k.namespaced {
		switch objNS := u.GetNamespace(); {
		case objNS == "":
			u.SetNamespace(ns)
		case objNS != ns:
			return nil, badRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
		if err := checkCreateNamespace(ns); err != nil {
			return nil, err
		}
	} else {
		delete(m, "namespace")
	}
	sentRV := u.GetResourceVersion()
	if sentRV != "" && !wo.dryRun {
		// kube-apiserver's storage refuses it, with a 500; a dry run never
		// reaches the storage, and answers with it.
		return nil, serverError(errors.New("resourceVersion should not be set on objects to be created"))
	}
	generate := u.GetName() == "" && u.GetGenerateName() != ""
	for _, f := range []string{"uid", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "generation"} {
		delete(m, f)
	}
	m["uid"] = string(uuid.NewUUID())
	m["creationTimestamp"] = s.opts.Now().UTC().Format(time.RFC3339)
	if k.generation || k.fixedGeneration || k.crd != nil {
		m["generation"] = int64(1)
	}
	if k.status && k.crd != nil {
		delete(obj, "status")
	}
	if k.prepareCreate != nil {
		k.prepareCreate(obj)
	}
	if k.crd != nil {
		unknown, err := k.crd.checked().schema.decode(obj)
		if err != nil {
			return nil, crDecodeError(k, err)
		}
		if err := wo.unknownFields(k, unknownFieldMessages(unknown)); err != nil {
			return nil, err
		}
	}
	if k.normalize != nil {
		var err error
		if obj, err = k.normalize(obj); err != nil {
			return nil, err
		}
		u.Object = obj
	}
	if !wo.applied {
		// After decoding's work (defaults, pruning, conversion), as
		// kube-apiserver's field manager sees the object.
		obj = s.manageFields(k, "", obj, nil, wo)
		u.Object = obj
	}
	// Mutating admission webhooks, after the field manager, as
	// kube-apiserver calls them (admission.go).
	obj, err := s.mutateWrite(k, "", obj, nil, wo)
	if err != nil {
		return nil, err
	}
	u.Object, m = obj, meta(obj)
	if k.strategyCreate != nil {
		k.strategyCreate(obj)
	}
	if k.createdBy != nil {
		k.createdBy(obj, wo.user)
	}
	if k.stored != nil {
		k.stored(obj)
	}
	for attempt := 0; ; attempt++ {
		if generate {
			u.SetName(u.GetGenerateName() + randomSuffix())
		}
		if err := s.validate(k, u, nil, ""); err != nil {
			return nil, err
		}
		wo.strategyWarnings(k, obj, nil)
		if err := s.validateWrite(k, "", obj, nil, wo); err != nil {
			return nil, err
		}
		if k.namespaced {
			// kube's NamespaceLifecycle admission names what is refused:
			// before names are generated, a generateName by its prefix.
			name := u.GetName()
			if generate {
				name = u.GetGenerateName()
			}
			if err := s.checkNamespace(u.GetNamespace(), k.groupResource(), name); err != nil {
				return nil, err
			}
		}
		var unadmitted map[string]any
		if k.admitManager != "" && wo.manage {
			unadmitted = runtime.DeepCopyJSON(obj)
		}
		if err := s.admitCreate(k, obj); err != nil {
			return nil, err
		}
		if unadmitted != nil {
			if k.admitBefore != nil {
				k.admitBefore(unadmitted, obj)
			}
			// What kube-apiserver's own controllers write right after the
			// create (a CRD's status), recorded as their write of /status.
			obj = s.manageFields(k, "status", obj, unadmitted, &writeOpts{manage: true, manager: k.admitManager})
			u.Object = obj
		}
		if wo.dryRun {
			s.undoAdmission(k, obj)
			enc, err := k.encoder(obj)(0)
			if err != nil {
				return nil, err
			}
			if sentRV != "" {
				meta(obj)["resourceVersion"] = sentRV
			} else {
				delete(meta(obj), "resourceVersion")
			}
			enc.Data, err = json.Marshal(obj)
			return enc, err
		}
		o, err := s.store.Create(k.storageResource, u.GetNamespace(), u.GetName(), k.encoder(obj))
		if err != nil {
			s.undoAdmission(k, obj)
		}
		if generate && errors.Is(err, storage.ErrAlreadyExists) && attempt < 8 {
			continue
		}
		if errors.Is(err, storage.ErrAlreadyExists) {
			return nil, apierrors.NewAlreadyExists(k.groupResource(), u.GetName())
		}
		if err == nil {
			s.afterWrite(k, nil, o)
		}
		return o, err
	}
}

// checkNamespace refuses writes into a namespace that is missing or
// terminating; gr and name are the object's, which the refusal names.
func (s *Server) checkNamespace(ns string, gr schema.GroupResource, name string) error {
	o, err := s.store.Get("/namespaces", "", ns)
	if errors.Is(err, storage.ErrNotFound) {
		return apierrors.NewNotFound(namespaceGVR.GroupResource(), ns)
	}
	if err != nil {
		return err
	}
	if terminating(o) {
		st := apierrors.NewForbidden(gr, name, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", ns))
		st.ErrStatus.Details.Causes = append(st.ErrStatus.Details.Causes, metav1.StatusCause{Type: "NamespaceTerminating", Field: "metadata.namespace", Message: fmt.Sprintf("namespace %s is being terminated", ns)})
		return st
	}
	return nil
}

const suffixAlphabet = "bcdfghjklmnpqrstvwxz2456789"

func randomSuffix() string {
	b := make([]byte, 5)
	for i := range b {
		b[i] = suffixAlphabet[rand.IntN(len(suffixAlphabet))]
	}
	return string(b)
}

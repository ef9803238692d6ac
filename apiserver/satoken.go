package apiserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"kloop.dev/kloop/apiserver/internal/jsontree"
	"kloop.dev/kloop/apiserver/storage"
)

// ServiceAccount tokens, as kube-apiserver issues them through the
// TokenRequest API (POST serviceaccounts/{name}/token, what kubelets,
// `kubectl create token` and operators use): JWTs signed by the server
// (ES256, a key made by New), with kube's claims, accepted as bearer
// tokens while they are unexpired and their ServiceAccount exists with the
// same UID (and, for a bound token, while the Pod, Secret or Node it is
// bound to does). The user is system:serviceaccount:<ns>:<name> in
// system:serviceaccounts and system:serviceaccounts:<ns>, with the token's
// JTI as its credential-id, as kube-apiserver authenticates it.

// tokenIssuer is the issuer and default audience of the server's
// ServiceAccount tokens, kube-apiserver's default --service-account-issuer.
const tokenIssuer = "https://kubernetes.default.svc.cluster.local"

// saTokens signs and verifies ServiceAccount tokens.
type saTokens struct {
	key *ecdsa.PrivateKey // made by New; never changes
}

func newSATokens() (*saTokens, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("apiserver: service account signing key: %w", err)
	}
	return &saTokens{key: key}, nil
}

// saClaims are the claims of a token, as kube-apiserver writes them.
type saClaims struct {
	Audience   []string `json:"aud"`
	Expiry     int64    `json:"exp"`
	IssuedAt   int64    `json:"iat"`
	Issuer     string   `json:"iss"`
	JTI        string   `json:"jti"`
	NotBefore  int64    `json:"nbf"`
	Subject    string   `json:"sub"`
	Kubernetes struct {
		Namespace      string    `json:"namespace"`
		Node           *boundRef `json:"node,omitempty"`
		Pod            *boundRef `json:"pod,omitempty"`
		Secret         *boundRef `json:"secret,omitempty"`
		ServiceAccount boundRef  `json:"serviceaccount"`
	} `json:"kubernetes.io"`
}

// boundRef names an object of a token's claims: its ServiceAccount, and the
// Pod, Secret or Node it is bound to.
type boundRef struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
}

var jwtHeader = base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"ES256","typ":"JWT"}`))

// sign returns the JWT of claims.
func (t *saTokens) sign(c *saClaims) (string, error) {
	body, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	signed := jwtHeader + "." + base64.RawURLEncoding.EncodeToString(body)
	digest := sha256.Sum256([]byte(signed))
	r, s, err := ecdsa.Sign(rand.Reader, t.key, digest[:])
	if err != nil {
		return "", err
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// verify returns the claims of token when it is one of the server's,
// unexpired, for the server's audience.
func (t *saTokens) verify(token string, now time.Time) (*saClaims, bool) {
	if len(token) > 16<<10 {
		return nil, false
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[0] != jwtHeader {
		return nil, false
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return nil, false
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(&t.key.PublicKey, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return nil, false
	}
	body, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, false
	}
	var c saClaims
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, false
	}
	sec := now.Unix()
	if c.Issuer != tokenIssuer || sec >= c.Expiry || sec < c.NotBefore-60 || !slices.Contains(c.Audience, tokenIssuer) {
		return nil, false
	}
	return &c, true
}

var (
	podsGVR    = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	nodesGVR   = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
)

// serviceAccountUser authenticates a ServiceAccount token: its claims
// verified, its ServiceAccount present with the UID it names, and so the
// object it is bound to, if any (a Pod, which must not have been deleted
// for more than its grace period, a Secret or a Node), as kube-apiserver's
// validator checks them. A token bound to a Pod or a Node carries their
// names and UIDs in the user's extra, under kube's keys.
func (s *Server) serviceAccountUser(token string) *identity {
	now := s.opts.Now()
	c, ok := s.saTokens.verify(token, now)
	if !ok {
		return nil
	}
	k := &c.Kubernetes
	o, err := s.store.Get("/serviceaccounts", k.Namespace, k.ServiceAccount.Name)
	if err != nil || o.UID != k.ServiceAccount.UID {
		return nil
	}
	extra := map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=" + c.JTI}}
	if k.Pod != nil {
		o, ok := s.boundObject(podsGVR, k.Namespace, k.Pod)
		if !ok {
			return nil
		}
		// A Pod deleted more than 60 s ago (kube's validator: its
		// deletionTimestamp before now - 60 s) no longer authenticates.
		if obj, err := decodeMap(o.Data); err == nil {
			if ts, err := time.Parse(time.RFC3339, jsontree.Str(meta(obj), "deletionTimestamp")); err == nil && ts.Before(now.Add(-60*time.Second)) {
				return nil
			}
		}
		extra["authentication.kubernetes.io/pod-name"] = []string{k.Pod.Name}
		extra["authentication.kubernetes.io/pod-uid"] = []string{k.Pod.UID}
	}
	if k.Secret != nil {
		if _, ok := s.boundObject(secretsGVR, k.Namespace, k.Secret); !ok {
			return nil
		}
	}
	if k.Node != nil {
		if _, ok := s.boundObject(nodesGVR, "", k.Node); !ok {
			return nil
		}
		extra["authentication.kubernetes.io/node-name"] = []string{k.Node.Name}
		extra["authentication.kubernetes.io/node-uid"] = []string{k.Node.UID}
	}
	return newIdentity(UserInfo{
		Name:   c.Subject,
		UID:    k.ServiceAccount.UID,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + k.Namespace},
		Extra:  extra,
	})
}

// boundObject returns the object of gvr ref names, when it exists with the
// UID ref names.
func (s *Server) boundObject(gvr schema.GroupVersionResource, ns string, ref *boundRef) (*storage.Object, bool) {
	o, err := s.store.Get(s.reg.get(gvr).storageResource, ns, ref.Name)
	if err != nil || o.UID != ref.UID {
		return nil, false
	}
	return o, true
}

// bindToken checks the object a TokenRequest binds its token to, as
// kube-apiserver's TokenRequest storage does, and sets it in the claims c:
// a Pod running as the ServiceAccount sa (with its Node, when it is
// scheduled to one that exists), a Secret or a Node, in the namespace ns.
func (s *Server) bindToken(ref *authenticationv1.BoundObjectReference, ns, sa string, c *saClaims) error {
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	get := func(gvr schema.GroupVersionResource, ns, name string) (*storage.Object, error) {
		o, err := s.store.Get(s.reg.get(gvr).storageResource, ns, name)
		if err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
			}
			return nil, err
		}
		return o, nil
	}
	var uid string
	switch {
	case gvk.Group == "" && gvk.Kind == "Pod":
		o, err := get(podsGVR, ns, ref.Name)
		if err != nil {
			return err
		}
		pod, err := decodeMap(o.Data)
		if err != nil {
			return err
		}
		if jsontree.Str(pod, "spec", "serviceAccountName") != sa {
			return apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", sa))
		}
		uid = o.UID
		c.Kubernetes.Pod = &boundRef{Name: ref.Name, UID: o.UID}
		if node := jsontree.Str(pod, "spec", "nodeName"); node != "" {
			if n, err := get(nodesGVR, "", node); err == nil {
				c.Kubernetes.Node = &boundRef{Name: node, UID: n.UID}
			}
		}
	case gvk.Group == "" && gvk.Kind == "Secret":
		o, err := get(secretsGVR, ns, ref.Name)
		if err != nil {
			return err
		}
		uid = o.UID
		c.Kubernetes.Secret = &boundRef{Name: ref.Name, UID: o.UID}
	case gvk.Group == "" && gvk.Kind == "Node":
		o, err := get(nodesGVR, "", ref.Name)
		if err != nil {
			return err
		}
		uid = o.UID
		c.Kubernetes.Node = &boundRef{Name: ref.Name, UID: o.UID}
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk.String()))
	}
	if ref.UID != "" && string(ref.UID) != uid {
		return apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, ref.Name,
			fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	return nil
}

// serveTokenRequest serves POST serviceaccounts/{name}/token: a TokenRequest
// answered with a new token of the ServiceAccount (201).
func (s *Server) serveTokenRequest(w http.ResponseWriter, r *http.Request, ri requestInfo) error {
	if r.Method != http.MethodPost {
		return methodNotAllowed()
	}
	wo, err := writeOptions(r.URL.Query(), "Create", "")
	if err != nil {
		return err
	}
	wo.manager = managerName(wo.manager, r.UserAgent())
	body, _, err := s.readObjectBody(r, "TokenRequest") // JSON, YAML or protobuf (client-go's CreateToken)
	if err != nil {
		return err
	}
	obj, err := decodeMap(body)
	if err != nil {
		return badRequest("%v", err)
	}
	if av, kd := jsontree.Str(obj, "apiVersion"), jsontree.Str(obj, "kind"); av != "" && kd != "" && (av != "authentication.k8s.io/v1" || kd != "TokenRequest") {
		return badRequest("%s in version %q cannot be handled as a TokenRequest", kd, av)
	}
	var tr authenticationv1.TokenRequest
	if err := json.Unmarshal(body, &tr); err != nil {
		return badRequest("%v", err)
	}
	if tr.Name != "" && tr.Name != ri.name {
		return badRequest("the name of the object (%s) does not match the name on the URL (%s)", tr.Name, ri.name)
	}
	o, err := s.store.Get("/serviceaccounts", ri.namespace, ri.name)
	if err != nil {
		return err
	}
	if tr.Spec.ExpirationSeconds == nil {
		d := int64(3600)
		tr.Spec.ExpirationSeconds = &d
	}
	var errs field.ErrorList
	if exp := *tr.Spec.ExpirationSeconds; exp < 600 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "expirationSeconds"), exp, "may not specify a duration less than 10 minutes"))
	} else if exp > 1<<32 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "expirationSeconds"), exp, "may not specify a duration larger than 2^32 seconds"))
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Group: "authentication.k8s.io", Kind: "TokenRequest"}, "", errs)
	}
	if len(tr.Spec.Audiences) == 0 {
		tr.Spec.Audiences = []string{tokenIssuer}
	}
	now := s.opts.Now()
	exp := now.Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second)
	var c saClaims
	c.Audience, c.Expiry, c.IssuedAt, c.NotBefore = tr.Spec.Audiences, exp.Unix(), now.Unix(), now.Unix()
	c.Issuer, c.JTI = tokenIssuer, string(uuid.NewUUID())
	c.Subject = "system:serviceaccount:" + ri.namespace + ":" + ri.name
	c.Kubernetes.Namespace = ri.namespace
	c.Kubernetes.ServiceAccount.Name, c.Kubernetes.ServiceAccount.UID = ri.name, o.UID
	if ref := tr.Spec.BoundObjectRef; ref != nil {
		if err := s.bindToken(ref, ri.namespace, ri.name, &c); err != nil {
			return err
		}
	}
	token, err := s.saTokens.sign(&c)
	if err != nil {
		return serverError(err)
	}
	out := authenticationv1.TokenRequest{
		TypeMeta:   metav1.TypeMeta{Kind: "TokenRequest", APIVersion: "authentication.k8s.io/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: ri.name, Namespace: ri.namespace, CreationTimestamp: metav1.NewTime(now.UTC().Truncate(time.Second))},
		Spec:       tr.Spec,
		Status:     authenticationv1.TokenRequestStatus{Token: token, ExpirationTimestamp: metav1.NewTime(exp.UTC().Truncate(time.Second))},
	}
	out.UID = types.UID(o.UID)
	mf, err := s.tokenRequestManagedFields(obj, wo)
	if err != nil {
		return serverError(err)
	}
	out.ManagedFields = mf
	writeObject(w, http.StatusCreated, &out)
	return nil
}

var tokenRequestGVK = authenticationv1.SchemeGroupVersion.WithKind("TokenRequest")

// tokenRequestManagedFields are the managedFields kube-apiserver answers a
// TokenRequest with: the request's fields, by its manager, through the
// token subresource.
func (s *Server) tokenRequestManagedFields(req map[string]any, wo *writeOpts) ([]metav1.ManagedFieldsEntry, error) {
	fm, err := s.subresourceFieldManager(tokenRequestGVK, "token")
	if err != nil {
		return nil, err
	}
	newObj := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(req)}
	newObj.SetGroupVersionKind(tokenRequestGVK)
	out, err := fm.Update(newEmpty(tokenRequestGVK), newObj, wo.manager)
	if err != nil {
		return nil, err
	}
	u, ok := out.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("field manager returned %T", out)
	}
	return u.GetManagedFields(), nil
}

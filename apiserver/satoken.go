package apiserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
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
)

// ServiceAccount tokens, as kube-apiserver issues them through the
// TokenRequest API (POST serviceaccounts/{name}/token, what kubelets,
// `kubectl create token` and operators use): JWTs signed by the server
// (ES256, a key made by New), with kube's claims, accepted as bearer
// tokens while they are unexpired and their ServiceAccount exists with the
// same UID. The user is system:serviceaccount:<ns>:<name> in
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
		Namespace      string `json:"namespace"`
		ServiceAccount struct {
			Name string `json:"name"`
			UID  string `json:"uid"`
		} `json:"serviceaccount"`
	} `json:"kubernetes.io"`
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

// serviceAccountUser authenticates a ServiceAccount token: its claims
// verified, and its ServiceAccount present with the UID it names.
func (s *Server) serviceAccountUser(token string) *identity {
	c, ok := s.saTokens.verify(token, s.opts.Now())
	if !ok {
		return nil
	}
	o, err := s.store.Get("/serviceaccounts", c.Kubernetes.Namespace, c.Kubernetes.ServiceAccount.Name)
	if err != nil || o.UID != c.Kubernetes.ServiceAccount.UID {
		return nil
	}
	return newIdentity(UserInfo{
		Name:   c.Subject,
		UID:    c.Kubernetes.ServiceAccount.UID,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + c.Kubernetes.Namespace},
		Extra:  map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=" + c.JTI}},
	})
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
	if tr.Spec.BoundObjectRef != nil {
		errs = append(errs, field.NotSupported(field.NewPath("spec", "boundObjectRef"), tr.Spec.BoundObjectRef.Kind, []string{"<none>: bound tokens are not served by this server"}))
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

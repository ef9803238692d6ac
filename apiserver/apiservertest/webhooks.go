package apiservertest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"kloop.dev/kloop/internal/selfsigned"
	"kloop.dev/kloop/webhook"
)

// WebhookInstallOptions says which webhooks InstallWebhooks installs, as
// envtest's WebhookInstallOptions.
type WebhookInstallOptions struct {
	// Paths are files and directories (their .yaml, .yml and .json files)
	// of MutatingWebhookConfigurations and ValidatingWebhookConfigurations,
	// such as kubebuilder's config/webhook/manifests.yaml; documents of
	// other kinds are skipped.
	Paths []string
	// MutatingWebhooks and ValidatingWebhooks are configurations of the
	// test's own, installed too.
	MutatingWebhooks   []*admissionregistrationv1.MutatingWebhookConfiguration
	ValidatingWebhooks []*admissionregistrationv1.ValidatingWebhookConfiguration
	// ConversionCRDs names installed CRDs (Options.CRDPaths, InstallCRDs)
	// whose conversion webhook (spec.conversion.strategy Webhook) is
	// pointed at the manager too, at their service's path or "/convert".
	ConversionCRDs []string
}

// maxManifestFile bounds what InstallWebhooks reads of one file.
const maxManifestFile = 16 << 20

// InstallWebhooks installs the webhook configurations of opts on the
// server, each webhook pointed at a webhook server on a free port of
// 127.0.0.1: its clientConfig becomes https://127.0.0.1:<port><path> (the
// path of its service reference, or of its URL) with the CA of a
// certificate made for the test in caBundle. It returns the
// webhook.Options that serve that port with that certificate: set them as
// manager.Options.Webhook, and the manager's webhook server (the builder's
// WebhookManagedBy) receives the server's calls, on either target:
//
//	mgr, err := manager.New(env.Config(), manager.Options{
//		Webhook: env.InstallWebhooks(apiservertest.WebhookInstallOptions{Paths: []string{"config/webhook"}}),
//	})
//
// A configuration that exists (on the real server, where cluster-scoped
// objects are shared by the tests of a binary) is replaced; the
// configurations are deleted when the test ends. kube-apiserver follows
// them through informers: they are in force a moment after InstallWebhooks
// returns (the embedded server: at once). Anything that fails fails the
// test.
func (e *Env) InstallWebhooks(opts WebhookInstallOptions) webhook.Options {
	e.t.Helper()
	wo, err := e.installWebhooks(opts)
	if err != nil {
		e.t.Fatalf("apiservertest: InstallWebhooks: %v", err)
	}
	return wo
}

func (e *Env) installWebhooks(opts WebhookInstallOptions) (webhook.Options, error) {
	dir := e.t.TempDir()
	caPEM, err := writeServingPair(dir)
	if err != nil {
		return webhook.Options{}, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return webhook.Options{}, err
	}
	addr := l.Addr().String()
	l.Close() // the manager binds it; a race with another process is unlikely on loopback
	base := "https://" + addr

	mutating, validating := slices.Clone(opts.MutatingWebhooks), slices.Clone(opts.ValidatingWebhooks)
	for _, p := range opts.Paths {
		m, v, err := readWebhookManifests(p)
		if err != nil {
			return webhook.Options{}, err
		}
		mutating, validating = append(mutating, m...), append(validating, v...)
	}
	point := func(cc *admissionregistrationv1.WebhookClientConfig) {
		path := "/"
		switch {
		case cc.Service != nil && cc.Service.Path != nil:
			path = *cc.Service.Path
		case cc.URL != nil:
			if u, err := url.Parse(*cc.URL); err == nil && u.Path != "" {
				path = u.Path
			}
		}
		u := base + path
		cc.URL, cc.Service, cc.CABundle = &u, nil, caPEM
	}
	cs, err := kubernetes.NewForConfig(e.cfg)
	if err != nil {
		return webhook.Options{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range mutating {
		c = c.DeepCopy()
		for i := range c.Webhooks {
			point(&c.Webhooks[i].ClientConfig)
		}
		api := cs.AdmissionregistrationV1().MutatingWebhookConfigurations()
		_, err := api.Create(ctx, c, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			var cur *admissionregistrationv1.MutatingWebhookConfiguration
			if cur, err = api.Get(ctx, c.Name, metav1.GetOptions{}); err == nil {
				c.ResourceVersion = cur.ResourceVersion
				_, err = api.Update(ctx, c, metav1.UpdateOptions{})
			}
		}
		if err != nil {
			return webhook.Options{}, fmt.Errorf("MutatingWebhookConfiguration %s: %w", c.Name, err)
		}
		name := c.Name
		e.t.Cleanup(func() { _ = api.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	for _, c := range validating {
		c = c.DeepCopy()
		for i := range c.Webhooks {
			point(&c.Webhooks[i].ClientConfig)
		}
		api := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations()
		_, err := api.Create(ctx, c, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			var cur *admissionregistrationv1.ValidatingWebhookConfiguration
			if cur, err = api.Get(ctx, c.Name, metav1.GetOptions{}); err == nil {
				c.ResourceVersion = cur.ResourceVersion
				_, err = api.Update(ctx, c, metav1.UpdateOptions{})
			}
		}
		if err != nil {
			return webhook.Options{}, fmt.Errorf("ValidatingWebhookConfiguration %s: %w", c.Name, err)
		}
		name := c.Name
		e.t.Cleanup(func() { _ = api.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	if len(opts.ConversionCRDs) > 0 {
		dyn, err := dynamic.NewForConfig(e.cfg)
		if err != nil {
			return webhook.Options{}, err
		}
		for _, name := range opts.ConversionCRDs {
			if err := pointConversion(ctx, dyn, name, base, caPEM); err != nil {
				return webhook.Options{}, err
			}
		}
	}
	return webhook.Options{BindAddress: addr, CertDir: dir}, nil
}

// pointConversion points the conversion webhook of CRD name at base.
func pointConversion(ctx context.Context, dyn dynamic.Interface, name, base string, caPEM []byte) error {
	crds := dyn.Resource(crdResource)
	for attempt := 0; ; attempt++ {
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("CRD %s: %w", name, err)
		}
		if s, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy"); s != "Webhook" {
			return fmt.Errorf("CRD %s: spec.conversion.strategy is %q, not Webhook", name, s)
		}
		path := "/convert"
		if p, ok, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "service", "path"); ok {
			path = p
		}
		cc := map[string]any{"url": base + path, "caBundle": base64.StdEncoding.EncodeToString(caPEM)}
		if err := unstructured.SetNestedField(crd.Object, cc, "spec", "conversion", "webhook", "clientConfig"); err != nil {
			return fmt.Errorf("CRD %s: %w", name, err)
		}
		_, err = crds.Update(ctx, crd, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) && attempt < 5 {
			continue
		}
		if err != nil {
			return fmt.Errorf("CRD %s: %w", name, err)
		}
		return nil
	}
}

// writeServingPair writes a new self-signed certificate for 127.0.0.1 and
// localhost (tls.crt) and its key (tls.key) into dir, and returns the
// certificate's PEM (the CA bundle).
func writeServingPair(dir string) ([]byte, error) {
	cert, caPEM, err := selfsigned.New(time.Now(), "apiservertest-webhook")
	if err != nil {
		return nil, err
	}
	key, ok := cert.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("unexpected key %T", cert.PrivateKey)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, webhook.DefaultCertName), caPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, webhook.DefaultKeyName), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	return caPEM, nil
}

// readWebhookManifests reads the webhook configurations of a file or a
// directory.
func readWebhookManifests(path string) ([]*admissionregistrationv1.MutatingWebhookConfiguration, []*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("webhook path: %w", err)
	}
	files := []string{path}
	if info.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, nil, fmt.Errorf("webhook path: %w", err)
		}
		files = nil
		for _, e := range entries {
			switch strings.ToLower(filepath.Ext(e.Name())) {
			case ".yaml", ".yml", ".json":
				if !e.IsDir() {
					files = append(files, filepath.Join(path, e.Name()))
				}
			}
		}
		slices.Sort(files)
	}
	var mutating []*admissionregistrationv1.MutatingWebhookConfiguration
	var validating []*admissionregistrationv1.ValidatingWebhookConfiguration
	for _, f := range files {
		data, err := readSmallFile(f)
		if err != nil {
			return nil, nil, err
		}
		d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for n := 1; ; n++ {
			var u unstructured.Unstructured
			if err := d.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, nil, fmt.Errorf("%s, document %d: %w", f, n, err)
			}
			if u.Object == nil {
				continue
			}
			var target any
			switch u.GetKind() {
			case "MutatingWebhookConfiguration":
				c := &admissionregistrationv1.MutatingWebhookConfiguration{}
				mutating, target = append(mutating, c), c
			case "ValidatingWebhookConfiguration":
				c := &admissionregistrationv1.ValidatingWebhookConfiguration{}
				validating, target = append(validating, c), c
			default:
				continue
			}
			if av := u.GetAPIVersion(); av != "admissionregistration.k8s.io/v1" {
				return nil, nil, fmt.Errorf("%s, document %d: %s of %q: only admissionregistration.k8s.io/v1 is served", f, n, u.GetKind(), av)
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, target); err != nil {
				return nil, nil, fmt.Errorf("%s, document %d: %w", f, n, err)
			}
		}
	}
	return mutating, validating, nil
}

func readSmallFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxManifestFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxManifestFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxManifestFile)
	}
	return data, nil
}

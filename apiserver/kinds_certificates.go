package apiserver

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// certificates.k8s.io/v1 CertificateSigningRequests, with their /status
// and /approval subresources, after kube-apiserver v1.37's strategy
// (pkg/registry/certificates) and validation (pkg/apis/certificates):
// the requester's identity is the creating user's, the spec never
// changes, Approved and Denied conditions come through /approval only and
// a certificate through /status only. Nothing signs: a certificate is
// whatever a client writes to /status.

func setupCertificateSigningRequest(k *kind) {
	k.createdBy = func(obj map[string]any, u *identity) {
		spec, _ := obj["spec"].(map[string]any)
		if spec == nil {
			spec = map[string]any{}
			obj["spec"] = spec
		}
		for _, f := range []string{"username", "uid", "groups", "extra"} {
			delete(spec, f)
		}
		if u == nil {
			return
		}
		spec["username"] = u.Name
		if u.UID != "" {
			spec["uid"] = u.UID
		}
		if len(u.Groups) > 0 {
			groups := make([]any, len(u.Groups))
			for i, g := range u.Groups {
				groups[i] = g
			}
			spec["groups"] = groups
		}
		if len(u.Extra) > 0 {
			extra := map[string]any{}
			for key, vs := range u.Extra {
				l := make([]any, len(vs))
				for i, v := range vs {
					l[i] = v
				}
				extra[key] = l
			}
			spec["extra"] = extra
		}
	}
	k.subresourceUpdate = typedSubresourceUpdate(csrSubresourceUpdate)
	k.validate = typedValidation(validateCSR)
	k.validateUpdate = typedUpdateValidation(func(c, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
		var errs field.ErrorList
		for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed} {
			if len(csrConditions(c, t)) < len(csrConditions(old, t)) {
				errs = append(errs, field.Forbidden(field.NewPath("status", "conditions"), fmt.Sprintf("updates may not remove a condition of type %q", t)))
			}
		}
		return errs
	})
	k.validateSubresource = typedSubresourceValidation(func(sub string, c, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
		var errs field.ErrorList
		if sub != "approval" {
			// Approval and denial come through /approval only.
			for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
				oldConds, newConds := csrConditions(old, t), csrConditions(c, t)
				switch {
				case len(newConds) < len(oldConds):
				case len(newConds) > len(oldConds):
					errs = append(errs, field.Forbidden(field.NewPath("status", "conditions"), fmt.Sprintf("updates may not add a condition of type %q", t)))
				case !equalSemantic(oldConds, newConds):
					errs = append(errs, field.Forbidden(field.NewPath("status", "conditions"), fmt.Sprintf("updates may not modify a condition of type %q", t)))
				}
			}
		}
		if !bytes.Equal(c.Status.Certificate, old.Status.Certificate) {
			switch {
			case sub != "status":
				errs = append(errs, field.Forbidden(field.NewPath("status", "certificate"), "updates may not set certificate content"))
			case len(old.Status.Certificate) > 0:
				errs = append(errs, field.Forbidden(field.NewPath("status", "certificate"), "updates may not modify existing certificate content"))
			}
		}
		return errs
	})
	k.resetFields = map[string][]fieldpath.Path{
		"":         {fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("status")},
		"status":   {fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("status", "conditions")},
		"approval": {fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("status", "certificate")},
	}
	// kube's printer describes the columns with v1beta1's documentation.
	sp, st := certificatesv1beta1.CertificateSigningRequestSpec{}.SwaggerDoc(), certificatesv1beta1.CertificateSigningRequestStatus{}.SwaggerDoc()
	k.columns = defCols(ageColumn().def, def("SignerName", "string", sp["signerName"]), def("Requestor", "string", sp["request"]),
		def("RequestedDuration", "string", sp["expirationSeconds"]), def("Condition", "string", st["conditions"]))
	k.cells = typedCells(func(c *certificatesv1.CertificateSigningRequest, now time.Time) []any {
		signer := c.Spec.SignerName
		if signer == "" {
			signer = "<none>"
		}
		requested := "<none>"
		if e := c.Spec.ExpirationSeconds; e != nil {
			requested = duration.HumanDuration(time.Duration(*e) * time.Second)
		}
		return []any{since(c.CreationTimestamp, now), signer, c.Spec.Username, requested, csrCondition(c)}
	})
}

// csrSubresourceUpdate is what each of the strategies of a
// CertificateSigningRequest keeps of the object before an update (the
// generic update keeps the spec on /status and /approval, and the status
// on the main resource).
func csrSubresourceUpdate(sub string, c, old *certificatesv1.CertificateSigningRequest, now metav1.Time) {
	switch sub {
	case "":
		c.Spec = old.Spec
	case "status":
		// A status writer does not change approval.
		for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
			oldIdx, newIdx := csrConditionIndices(old, t), csrConditionIndices(c, t)
			if len(oldIdx) == len(newIdx) {
				for i, o := range oldIdx {
					c.Status.Conditions[newIdx[i]] = old.Status.Conditions[o]
				}
			}
		}
		populateCSRConditionTimes(c, old, now)
	case "approval":
		populateCSRConditionTimes(c, old, now)
		conds := c.Status.Conditions
		c.Status = old.Status
		c.Status.Conditions = conds
	}
}

func populateCSRConditionTimes(c, old *certificatesv1.CertificateSigningRequest, now metav1.Time) {
	for i := range c.Status.Conditions {
		cond := &c.Status.Conditions[i]
		if cond.LastUpdateTime.IsZero() {
			cond.LastUpdateTime = now
		}
		if cond.LastTransitionTime.IsZero() {
			cond.LastTransitionTime = now
			for _, o := range old.Status.Conditions {
				if o.Type == cond.Type && o.Status == cond.Status && !o.LastTransitionTime.IsZero() {
					cond.LastTransitionTime = o.LastTransitionTime
					break
				}
			}
		}
	}
}

func csrConditionIndices(c *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) []int {
	var out []int
	for i, cond := range c.Status.Conditions {
		if cond.Type == t {
			out = append(out, i)
		}
	}
	return out
}

func csrConditions(c *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) []certificatesv1.CertificateSigningRequestCondition {
	var out []certificatesv1.CertificateSigningRequestCondition
	for _, i := range csrConditionIndices(c, t) {
		out = append(out, c.Status.Conditions[i])
	}
	return out
}

// csrCondition is the Condition cell.
func csrCondition(c *certificatesv1.CertificateSigningRequest) string {
	var approved, denied, failed bool
	for _, cond := range c.Status.Conditions {
		switch cond.Type {
		case certificatesv1.CertificateApproved:
			approved = true
		case certificatesv1.CertificateDenied:
			denied = true
		case certificatesv1.CertificateFailed:
			failed = true
		}
	}
	status := "Pending"
	switch {
	case denied:
		status = "Denied"
	case approved:
		status = "Approved"
	}
	if failed {
		status += ",Failed"
	}
	if len(c.Status.Certificate) > 0 {
		status += ",Issued"
	}
	return status
}

var csrUsages = []string{"any", "cert sign", "client auth", "code signing", "content commitment", "crl sign", "data encipherment", "decipher only",
	"digital signature", "email protection", "encipher only", "ipsec end system", "ipsec tunnel", "ipsec user", "key agreement", "key encipherment",
	"microsoft sgc", "netscape sgc", "ocsp signing", "s/mime", "server auth", "signing", "timestamping"}

func validateCSR(c *certificatesv1.CertificateSigningRequest) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if err := checkCSRRequest(c.Spec.Request); err != nil {
		errs = append(errs, field.Invalid(spec.Child("request"), c.Spec.Request, err.Error()))
	}
	if len(c.Spec.Usages) == 0 {
		errs = append(errs, field.Required(spec.Child("usages"), ""))
	}
	for i, u := range c.Spec.Usages {
		if !slices.Contains(csrUsages, string(u)) {
			errs = append(errs, field.NotSupported(spec.Child("usages").Index(i), string(u), csrUsages))
		}
	}
	seen := map[certificatesv1.KeyUsage]bool{}
	for i, u := range c.Spec.Usages {
		if seen[u] {
			errs = append(errs, field.Duplicate(spec.Child("usages").Index(i), string(u)))
		}
		seen[u] = true
	}
	if c.Spec.SignerName == "kubernetes.io/legacy-unknown" {
		errs = append(errs, field.Invalid(spec.Child("signerName"), c.Spec.SignerName, "the legacy signerName is not allowed via this API version"))
	} else {
		errs = append(errs, validateSignerName(spec.Child("signerName"), c.Spec.SignerName)...)
	}
	if e := c.Spec.ExpirationSeconds; e != nil && *e < 600 {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), int64(*e), "may not specify a duration less than 600 seconds (10 minutes)"))
	}
	cp := field.NewPath("status", "conditions")
	types := map[certificatesv1.RequestConditionType]bool{}
	approved, denied := false, false
	for i, cond := range c.Status.Conditions {
		if cond.Type == "" {
			errs = append(errs, field.Required(cp.Index(i).Child("type"), ""))
		}
		allowed := []string{"False", "True", "Unknown"}
		if cond.Type == certificatesv1.CertificateApproved || cond.Type == certificatesv1.CertificateDenied || cond.Type == certificatesv1.CertificateFailed {
			allowed = []string{"True"}
		}
		switch {
		case cond.Status == "":
			errs = append(errs, field.Required(cp.Index(i).Child("status"), ""))
		case !slices.Contains(allowed, string(cond.Status)):
			errs = append(errs, field.NotSupported(cp.Index(i).Child("status"), string(cond.Status), allowed))
		}
		switch cond.Type {
		case certificatesv1.CertificateApproved:
			approved = true
			if denied {
				errs = append(errs, field.Invalid(cp, string(cond.Type), "Approved and Denied conditions are mutually exclusive"))
			}
		case certificatesv1.CertificateDenied:
			denied = true
			if approved {
				errs = append(errs, field.Invalid(cp, string(cond.Type), "Approved and Denied conditions are mutually exclusive"))
			}
		}
		if types[cond.Type] {
			errs = append(errs, field.Duplicate(cp.Index(i).Child("type"), string(cond.Type)))
		}
		types[cond.Type] = true
	}
	if err := checkCertificate(c.Status.Certificate); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("status", "certificate"), "<certificate data>", err.Error()))
	}
	return errs
}

// checkCSRRequest parses a PEM certificate request and checks its
// signature, with kube's errors.
func checkCSRRequest(b []byte) error {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	csr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return err
	}
	return csr.CheckSignature()
}

// checkCertificate checks an issued certificate: CERTIFICATE PEM blocks
// only, without headers, each holding certificates.
func checkCertificate(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	blocks := 0
	for {
		block, rest := pem.Decode(b)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("only CERTIFICATE PEM blocks are allowed, found %q", block.Type)
		}
		if len(block.Headers) != 0 {
			return errors.New("no PEM block headers are permitted")
		}
		blocks++
		certs, err := x509.ParseCertificates(block.Bytes)
		if err != nil {
			return err
		}
		if len(certs) == 0 {
			return errors.New("found CERTIFICATE PEM block containing 0 certificates")
		}
		b = rest
	}
	if blocks == 0 {
		return errors.New("must contain at least one CERTIFICATE PEM block")
	}
	return nil
}

// validateSignerName is kube-apiserver's: a DNS domain with a dot, a
// slash, and a path of DNS subdomains.
func validateSignerName(p *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	segments := strings.Split(name, "/")
	if len(segments) != 2 {
		return field.ErrorList{field.Invalid(p, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	var errs field.ErrorList
	if len(segments[0]) > validation.DNS1123SubdomainMaxLength {
		errs = append(errs, field.TooLong(p, "", validation.DNS1123SubdomainMaxLength))
	}
	domain := strings.Split(segments[0], ".")
	for _, l := range domain {
		if msgs := validation.IsDNS1123Label(l); len(msgs) > 0 {
			for _, m := range msgs {
				errs = append(errs, field.Invalid(p, segments[0], fmt.Sprintf("validating label %q: %s", l, m)))
			}
			break
		}
	}
	if len(domain) < 2 {
		errs = append(errs, field.Invalid(p, segments[0], "should be a domain with at least two segments separated by dots"))
	}
	for _, l := range strings.Split(segments[1], ".") {
		if msgs := validation.IsDNS1123Subdomain(l); len(msgs) > 0 {
			for _, m := range msgs {
				errs = append(errs, field.Invalid(p, segments[1], fmt.Sprintf("validating label %q: %s", l, m)))
			}
			break
		}
	}
	if most := 2*validation.DNS1123SubdomainMaxLength + validation.DNS1123LabelMaxLength + 2; len(name) > most {
		errs = append(errs, field.TooLong(p, "", most))
	}
	return errs
}

package apiserver

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// networking.k8s.io/v1 Ingresses, IngressClasses and NetworkPolicies, and
// discovery.k8s.io/v1 EndpointSlices, after kube-apiserver v1.37's
// defaults, strategies and validation (pkg/apis/networking,
// pkg/apis/discovery, pkg/registry/networking, pkg/registry/discovery).

func setupEndpointSlice(k *kind) {
	k.declarative = betaDeclarative
	// Labels move an EndpointSlice's generation too (its strategy).
	k.labelsMoveGeneration = true
	k.defaults = typedDefaults(func(es *discoveryv1.EndpointSlice) {
		for i := range es.Ports {
			p := &es.Ports[i]
			if p.Name == nil {
				p.Name = ptrTo("")
			}
			if p.Protocol == nil {
				p.Protocol = ptrTo(corev1.ProtocolTCP)
			}
		}
	})
	k.validate = typedValidation(validateEndpointSlice)
	// The endpoints are checked on create, and on an update that changes
	// them (one keeping invalid endpoints as they were is not refused).
	k.validateCreate = typedValidation(func(es *discoveryv1.EndpointSlice) field.ErrorList { return validateEndpoints(es) })
	k.validateUpdate = typedUpdateValidation(func(es, old *discoveryv1.EndpointSlice) field.ErrorList {
		var errs field.ErrorList
		if !equalSemantic(es.Endpoints, old.Endpoints) {
			errs = append(errs, validateEndpoints(es)...)
		}
		if es.AddressType != old.AddressType {
			errs = append(errs, field.Invalid(field.NewPath("addressType"), string(es.AddressType), "field is immutable").MarkCoveredByDeclarative())
		}
		return errs
	})
	doc := discoveryv1.EndpointSlice{}.SwaggerDoc()
	k.columns = defCols(def("AddressType", "string", doc["addressType"]), def("Ports", "string", doc["ports"]), def("Endpoints", "string", doc["endpoints"]), ageColumn().def)
	k.cells = typedCells(func(es *discoveryv1.EndpointSlice, now time.Time) []any {
		var ports []string
		for _, p := range es.Ports {
			switch {
			case p.Port != nil:
				ports = append(ports, strconv.Itoa(int(*p.Port)))
			case p.Name != nil:
				ports = append(ports, *p.Name)
			default:
				ports = append(ports, "*")
			}
		}
		var addrs []string
		for _, e := range es.Endpoints {
			addrs = append(addrs, e.Addresses...)
		}
		return []any{string(es.AddressType), listWithMore(ports, 3), listWithMore(addrs, 3), since(es.CreationTimestamp, now)}
	})
}

// listWithMore is kube's printers' list of at most n items, then how many
// more; "<unset>" when empty.
func listWithMore(items []string, n int) string {
	if len(items) == 0 {
		return "<unset>"
	}
	if len(items) <= n {
		return strings.Join(items, ",")
	}
	return fmt.Sprintf("%s + %d more...", strings.Join(items[:n], ","), len(items)-n)
}

func validateEndpointSlice(es *discoveryv1.EndpointSlice) field.ErrorList {
	var errs field.ErrorList
	at := field.NewPath("addressType")
	switch es.AddressType {
	case "":
		errs = append(errs, field.Required(at, "").MarkCoveredByDeclarative())
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN:
	default:
		errs = append(errs, field.NotSupported(at, string(es.AddressType), []string{"FQDN", "IPv4", "IPv6"}).MarkCoveredByDeclarative())
	}
	var names []string
	for i, p := range es.Ports {
		pp := field.NewPath("ports").Index(i)
		name := deref(p.Name)
		if name != "" {
			for _, msg := range validation.IsDNS1123Label(name) {
				errs = append(errs, field.Invalid(pp.Child("name"), name, msg))
			}
		}
		if slices.Contains(names, name) {
			errs = append(errs, field.Duplicate(pp.Child("name"), name))
		} else {
			names = append(names, name)
		}
		switch proto := deref(p.Protocol); proto {
		case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		default:
			errs = append(errs, field.NotSupported(pp.Child("protocol"), string(proto), []string{"SCTP", "TCP", "UDP"}))
		}
	}
	return errs
}

func validateEndpoints(es *discoveryv1.EndpointSlice) field.ErrorList {
	var errs field.ErrorList
	for i, e := range es.Endpoints {
		ap := field.NewPath("endpoints").Index(i).Child("addresses")
		if len(e.Addresses) == 0 {
			errs = append(errs, field.Required(ap, "must contain at least 1 address").MarkCoveredByDeclarative())
		}
		for j, a := range e.Addresses {
			switch es.AddressType {
			case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6:
				ip, err := netip.ParseAddr(a)
				switch {
				case err != nil:
					errs = append(errs, field.Invalid(ap.Index(j), a, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"))
				case es.AddressType == discoveryv1.AddressTypeIPv4 && !ip.Is4():
					errs = append(errs, field.Invalid(ap, a, "must be an IPv4 address"))
				case es.AddressType == discoveryv1.AddressTypeIPv6 && !ip.Is6():
					errs = append(errs, field.Invalid(ap, a, "must be an IPv6 address"))
				}
			}
		}
	}
	return errs
}

func setupIngress(k *kind) {
	k.validate = typedValidation(func(in *networkingv1.Ingress) field.ErrorList {
		return validateIngressSpec(&in.Spec, field.NewPath("spec"))
	})
	k.columns = defCols(def("Class", "string", "The name of the IngressClass resource that should be used for additional configuration"),
		def("Hosts", "string", "Hosts that incoming requests are matched against before the ingress rule"),
		def("Address", "string", "Address is a list containing ingress points for the load-balancer"),
		def("Ports", "string", "Ports of TLS configurations that open"), ageColumn().def)
	k.cells = typedCells(func(in *networkingv1.Ingress, now time.Time) []any {
		class := "<none>"
		if in.Spec.IngressClassName != nil {
			class = *in.Spec.IngressClassName
		}
		var hosts []string
		more := false
		for _, r := range in.Spec.Rules {
			if len(hosts) == 3 {
				more = true
			}
			if !more && r.Host != "" {
				hosts = append(hosts, r.Host)
			}
		}
		hostCell := strings.Join(hosts, ",")
		switch {
		case len(hosts) == 0:
			hostCell = "*"
		case more:
			hostCell = fmt.Sprintf("%s + %d more...", hostCell, len(in.Spec.Rules)-3)
		}
		addrs := map[string]bool{}
		for _, lb := range in.Status.LoadBalancer.Ingress {
			if lb.IP != "" {
				addrs[lb.IP] = true
			} else if lb.Hostname != "" {
				addrs[lb.Hostname] = true
			}
		}
		// Server-side Tables are printed wide: the address is not cut.
		address := strings.Join(slices.Sorted(mapKeys(addrs)), ",")
		ports := "80"
		if len(in.Spec.TLS) != 0 {
			ports = "80, 443"
		}
		return []any{class, hostCell, address, ports, since(in.CreationTimestamp, now)}
	})
}

func validateIngressSpec(sp *networkingv1.IngressSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(sp.Rules) == 0 && sp.DefaultBackend == nil {
		errs = append(errs, field.Invalid(path, sp.Rules, "either `defaultBackend` or `rules` must be specified"))
	}
	if sp.DefaultBackend != nil {
		errs = append(errs, validateIngressBackend(sp.DefaultBackend, path.Child("defaultBackend"))...)
	}
	for i, r := range sp.Rules {
		rp := path.Child("rules").Index(i)
		if r.Host != "" {
			if _, err := netip.ParseAddr(r.Host); err == nil {
				errs = append(errs, field.Invalid(rp.Child("host"), r.Host, "must be a DNS name, not an IP address"))
			}
			check := validation.IsDNS1123Subdomain
			if strings.Contains(r.Host, "*") {
				check = validation.IsWildcardDNS1123Subdomain
			}
			for _, msg := range check(r.Host) {
				errs = append(errs, field.Invalid(rp.Child("host"), r.Host, msg))
			}
		}
		if r.HTTP == nil {
			continue
		}
		hp := rp.Child("http")
		if len(r.HTTP.Paths) == 0 {
			errs = append(errs, field.Required(hp.Child("paths"), ""))
		}
		for j, p := range r.HTTP.Paths {
			pp := hp.Child("paths").Index(j)
			if p.PathType == nil {
				errs = append(errs, field.Required(pp.Child("pathType"), "pathType must be specified"))
				continue
			}
			switch *p.PathType {
			case networkingv1.PathTypeExact, networkingv1.PathTypePrefix:
				if !strings.HasPrefix(p.Path, "/") {
					errs = append(errs, field.Invalid(pp.Child("path"), p.Path, "must be an absolute path"))
				}
				if p.Path != "" {
					for _, seq := range []string{"//", "/./", "/../", "%2f", "%2F"} {
						if strings.Contains(p.Path, seq) {
							errs = append(errs, field.Invalid(pp.Child("path"), p.Path, fmt.Sprintf("must not contain '%s'", seq)))
						}
					}
					for _, suf := range []string{"/..", "/."} {
						if strings.HasSuffix(p.Path, suf) {
							errs = append(errs, field.Invalid(pp.Child("path"), p.Path, fmt.Sprintf("cannot end with '%s'", suf)))
						}
					}
				}
			case networkingv1.PathTypeImplementationSpecific:
				if p.Path != "" && !strings.HasPrefix(p.Path, "/") {
					errs = append(errs, field.Invalid(pp.Child("path"), p.Path, "must be an absolute path"))
				}
			default:
				errs = append(errs, field.NotSupported(pp.Child("pathType"), string(*p.PathType), []string{"Exact", "ImplementationSpecific", "Prefix"}))
			}
			errs = append(errs, validateIngressBackend(&p.Backend, pp.Child("backend"))...)
		}
	}
	if sp.IngressClassName != nil {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*sp.IngressClassName, false) {
			errs = append(errs, field.Invalid(path.Child("ingressClassName"), *sp.IngressClassName, msg))
		}
	}
	return errs
}

func validateIngressBackend(b *networkingv1.IngressBackend, path *field.Path) field.ErrorList {
	switch {
	case b.Resource != nil && b.Service != nil:
		return field.ErrorList{field.Invalid(path, "", "cannot set both resource and service backends")}
	case b.Resource != nil:
		var errs field.ErrorList
		if b.Resource.Kind == "" {
			errs = append(errs, field.Required(path.Child("resource", "kind"), ""))
		}
		if b.Resource.Name == "" {
			errs = append(errs, field.Required(path.Child("resource", "name"), ""))
		}
		return errs
	case b.Service == nil:
		return field.ErrorList{field.Invalid(path, "", "resource or service backend is required")}
	}
	var errs field.ErrorList
	s := b.Service
	if s.Name == "" {
		errs = append(errs, field.Required(path.Child("service", "name"), ""))
	} else {
		for _, msg := range apivalidation.NameIsDNSLabel(s.Name, false) {
			errs = append(errs, field.Invalid(path.Child("service", "name"), s.Name, msg))
		}
	}
	hasName, hasNumber := s.Port.Name != "", s.Port.Number != 0
	switch {
	case hasName && hasNumber:
		errs = append(errs, field.Invalid(path, "", "cannot set both port name & port number"))
	case hasName:
		for _, msg := range validation.IsValidPortName(s.Port.Name) {
			errs = append(errs, field.Invalid(path.Child("service", "port", "name"), s.Port.Name, msg))
		}
	case hasNumber:
		for _, msg := range validation.IsValidPortNum(int(s.Port.Number)) {
			errs = append(errs, field.Invalid(path.Child("service", "port", "number"), int64(s.Port.Number), msg))
		}
	default:
		errs = append(errs, field.Required(path, "port name or number is required"))
	}
	return errs
}

func setupIngressClass(k *kind) {
	k.defaults = typedDefaults(func(ic *networkingv1.IngressClass) {
		if p := ic.Spec.Parameters; p != nil && p.Scope == nil {
			p.Scope = ptrTo(networkingv1.IngressClassParametersReferenceScopeCluster)
		}
	})
	k.validate = typedValidation(func(ic *networkingv1.IngressClass) field.ErrorList {
		cp := field.NewPath("spec", "controller")
		var errs field.ErrorList
		if len(ic.Spec.Controller) > 250 {
			errs = append(errs, field.TooLong(cp, "", 250))
		}
		errs = append(errs, domainPrefixedPath(cp, ic.Spec.Controller)...)
		return errs
	})
	k.validateUpdate = typedUpdateValidation(func(ic, old *networkingv1.IngressClass) field.ErrorList {
		return immutable(ic.Spec.Controller, old.Spec.Controller, field.NewPath("spec", "controller"))
	})
	k.columns = defCols(def("Controller", "string", "Controller that is responsible for handling this class"),
		def("Parameters", "string", "A reference to a resource with additional parameters"), ageColumn().def)
	k.cells = typedCells(func(ic *networkingv1.IngressClass, now time.Time) []any {
		params := "<none>"
		if p := ic.Spec.Parameters; p != nil {
			params = p.Kind
			if p.APIGroup != nil {
				params += "." + *p.APIGroup
			}
			params += "/" + p.Name
		}
		return []any{ic.Spec.Controller, params, since(ic.CreationTimestamp, now)}
	})
	// The Name cell of the default class says so.
	k.nameCell = func(obj map[string]any) string {
		name, _ := meta(obj)["name"].(string)
		if a, _ := meta(obj)["annotations"].(map[string]any); a != nil && a[networkingv1.AnnotationIsDefaultIngressClass] == "true" {
			return name + " (default)"
		}
		return name
	}
}

// domainPrefixedPath is apimachinery's IsDomainPrefixedPath.
func domainPrefixedPath(p *field.Path, dpPath string) field.ErrorList {
	if dpPath == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	segments := strings.SplitN(dpPath, "/", 2)
	if len(segments) != 2 || segments[0] == "" || segments[1] == "" {
		return field.ErrorList{field.Invalid(p, dpPath, "must be a domain-prefixed path (such as \"acme.io/foo\")")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(segments[0]) {
		errs = append(errs, field.Invalid(p, segments[0], msg))
	}
	return errs
}

func setupNetworkPolicy(k *kind) {
	k.defaults = typedDefaults(func(np *networkingv1.NetworkPolicy) {
		for _, ports := range append(portsOf(np.Spec.Ingress), portsOfEgress(np.Spec.Egress)...) {
			for i := range ports {
				if ports[i].Protocol == nil {
					ports[i].Protocol = ptrTo(corev1.ProtocolTCP)
				}
			}
		}
		if len(np.Spec.PolicyTypes) == 0 {
			np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
			if len(np.Spec.Egress) != 0 {
				np.Spec.PolicyTypes = append(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
			}
		}
	})
	k.validate = typedValidation(func(np *networkingv1.NetworkPolicy) field.ErrorList {
		spec := field.NewPath("spec")
		errs := metav1validation.ValidateLabelSelector(&np.Spec.PodSelector, metav1validation.LabelSelectorValidationOptions{}, spec.Child("podSelector"))
		check := func(rules [][]networkingv1.NetworkPolicyPort, dir string) {
			for i, ports := range rules {
				for j, port := range ports {
					errs = append(errs, validateNetworkPolicyPort(&port, spec.Child(dir).Index(i).Child("ports").Index(j))...)
				}
			}
		}
		check(portsOf(np.Spec.Ingress), "ingress")
		check(portsOfEgress(np.Spec.Egress), "egress")
		if len(np.Spec.PolicyTypes) > 2 {
			return append(errs, field.Invalid(spec.Child("policyTypes"), np.Spec.PolicyTypes, "may not specify more than two policyTypes"))
		}
		for i, t := range np.Spec.PolicyTypes {
			if t != networkingv1.PolicyTypeIngress && t != networkingv1.PolicyTypeEgress {
				errs = append(errs, field.NotSupported(spec.Child("policyTypes").Index(i), string(t), []string{"Ingress", "Egress"}))
			}
		}
		return errs
	})
	k.columns = defCols(def("Pod-Selector", "string", networkingv1.NetworkPolicySpec{}.SwaggerDoc()["podSelector"]), ageColumn().def)
	k.cells = typedCells(func(np *networkingv1.NetworkPolicy, now time.Time) []any {
		return []any{metav1.FormatLabelSelector(&np.Spec.PodSelector), since(np.CreationTimestamp, now)}
	})
}

func portsOf(rules []networkingv1.NetworkPolicyIngressRule) [][]networkingv1.NetworkPolicyPort {
	out := make([][]networkingv1.NetworkPolicyPort, len(rules))
	for i := range rules {
		out[i] = rules[i].Ports
	}
	return out
}

func portsOfEgress(rules []networkingv1.NetworkPolicyEgressRule) [][]networkingv1.NetworkPolicyPort {
	out := make([][]networkingv1.NetworkPolicyPort, len(rules))
	for i := range rules {
		out[i] = rules[i].Ports
	}
	return out
}

func validateNetworkPolicyPort(port *networkingv1.NetworkPolicyPort, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if proto := port.Protocol; proto != nil && *proto != corev1.ProtocolTCP && *proto != corev1.ProtocolUDP && *proto != corev1.ProtocolSCTP {
		errs = append(errs, field.NotSupported(p.Child("protocol"), string(*proto), []string{"TCP", "UDP", "SCTP"}))
	}
	switch {
	case port.Port != nil && port.Port.Type == intstr.Int:
		for _, msg := range validation.IsValidPortNum(int(port.Port.IntVal)) {
			errs = append(errs, field.Invalid(p.Child("port"), int64(port.Port.IntVal), msg))
		}
		if port.EndPort != nil {
			if *port.EndPort < port.Port.IntVal {
				errs = append(errs, field.Invalid(p.Child("endPort"), int64(*port.EndPort), "must be greater than or equal to `port`"))
			}
			for _, msg := range validation.IsValidPortNum(int(*port.EndPort)) {
				errs = append(errs, field.Invalid(p.Child("endPort"), int64(*port.EndPort), msg))
			}
		}
	case port.Port != nil:
		if port.EndPort != nil {
			errs = append(errs, field.Invalid(p.Child("endPort"), int64(*port.EndPort), "may not be specified when `port` is non-numeric"))
		}
		for _, msg := range validation.IsValidPortName(port.Port.StrVal) {
			errs = append(errs, field.Invalid(p.Child("port"), port.Port.StrVal, msg))
		}
	case port.EndPort != nil:
		errs = append(errs, field.Invalid(p.Child("endPort"), int64(*port.EndPort), "may not be specified when `port` is not specified"))
	}
	return errs
}

package apiext

import (
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AcceptNames does the work of kube-apiserver's naming and establishing
// controllers in one step, for a server that serves a CRD as soon as it is
// written: it claims crd.Spec.Names in status.acceptedNames unless another
// CRD of the same group already accepted one of them, and sets the
// NamesAccepted condition (reasons NoConflicts, PluralConflict,
// SingularConflict, ShortNamesConflict, KindConflict, ListKindConflict) and
// the Established condition (True, InitialNamesAccepted, once all names are
// accepted; otherwise False, NotAccepted, unless it was established before).
// others are the other stored CRDs; crd's own previous status is honoured.
// It reports whether crd is established.
func AcceptNames(crd *CustomResourceDefinition, others []*CustomResourceDefinition, now metav1.Time) bool {
	if crd == nil {
		return false
	}
	resources := map[string]bool{}
	kinds := map[string]bool{}
	claim := func(n CustomResourceDefinitionNames) {
		resources[n.Plural], resources[n.Singular] = true, true
		for _, s := range n.ShortNames {
			resources[s] = true
		}
		kinds[n.Kind], kinds[n.ListKind] = true, true
	}
	for _, o := range others {
		if o != nil && o.Name != crd.Name && o.Spec.Group == crd.Spec.Group {
			claim(o.Status.AcceptedNames)
		}
	}
	claim(crd.Status.AcceptedNames)

	requested, accepted := crd.Spec.Names, crd.Status.AcceptedNames
	newNames := accepted
	cond := CustomResourceDefinitionCondition{Type: NamesAccepted, Status: ConditionUnknown}
	fail := func(reason string, err error) {
		cond.Status, cond.Reason, cond.Message = ConditionFalse, reason, err.Error()
	}
	if err := freshOrOwn(requested.Plural, accepted.Plural, resources); err != nil {
		fail("PluralConflict", err)
	} else {
		newNames.Plural = requested.Plural
	}
	if err := freshOrOwn(requested.Singular, accepted.Singular, resources); err != nil {
		fail("SingularConflict", err)
	} else {
		newNames.Singular = requested.Singular
	}
	if !slices.Equal(requested.ShortNames, accepted.ShortNames) {
		var errs []error
		for _, s := range requested.ShortNames {
			if slices.Contains(accepted.ShortNames, s) {
				continue
			}
			if err := freshOrOwn(s, "", resources); err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) > 0 {
			fail("ShortNamesConflict", aggregate(errs))
		} else {
			newNames.ShortNames = requested.ShortNames
		}
	}
	if err := freshOrOwn(requested.Kind, accepted.Kind, kinds); err != nil {
		fail("KindConflict", err)
	} else {
		newNames.Kind = requested.Kind
	}
	if err := freshOrOwn(requested.ListKind, accepted.ListKind, kinds); err != nil {
		fail("ListKindConflict", err)
	} else {
		newNames.ListKind = requested.ListKind
	}
	newNames.Categories = requested.Categories
	if cond.Status == ConditionUnknown {
		cond.Status, cond.Reason, cond.Message = ConditionTrue, "NoConflicts", "no conflicts found"
	}
	crd.Status.AcceptedNames = newNames
	SetCondition(crd, cond, now)

	if cond.Status == ConditionTrue {
		SetCondition(crd, CustomResourceDefinitionCondition{Type: Established, Status: ConditionTrue, Reason: "InitialNamesAccepted", Message: "the initial names have been accepted"}, now)
		return true
	}
	if IsEstablished(crd) {
		return true // keeps serving under its accepted names
	}
	SetCondition(crd, CustomResourceDefinitionCondition{Type: Established, Status: ConditionFalse, Reason: "NotAccepted", Message: "not all names are accepted"}, now)
	return false
}

func freshOrOwn(requested, accepted string, used map[string]bool) error {
	if requested == accepted || !used[requested] {
		return nil
	}
	return fmt.Errorf("%q is already in use", requested)
}

// aggregate formats errors like apimachinery's utilerrors.NewAggregate.
func aggregate(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	msg := "["
	for i, e := range errs {
		if i > 0 {
			msg += ", "
		}
		msg += e.Error()
	}
	return errors.New(msg + "]")
}

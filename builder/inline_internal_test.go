package builder

import (
	"testing"

	"kloop.dev/kloop/handler"
	"kloop.dev/kloop/handler/predicate"
)

// For and Owns with kloop's own predicates are handled on the informer's
// goroutine; Watches, and anything with a predicate of the user's, are
// buffered.
func TestInlineDelivery(t *testing.T) {
	user := predicate.NewFuncs(func(handler.Object) bool { return true })
	for _, tt := range []struct {
		what  string
		preds []predicate.Predicate
		want  bool
	}{
		{"For", nil, true},
		{"Owns", nil, true},
		{"Watches", nil, false},
		{"For", []predicate.Predicate{predicate.GenerationChanged{}, predicate.Not(predicate.LabelChanged{})}, true},
		{"Owns", []predicate.Predicate{predicate.ResourceVersionChanged{}}, true},
		{"For", []predicate.Predicate{predicate.GenerationChanged{}, user}, false},
		{"Owns", []predicate.Predicate{predicate.Or(user)}, false},
		{"Watches", []predicate.Predicate{predicate.GenerationChanged{}}, false},
	} {
		if got := inlineDelivery(tt.what, tt.preds); got != tt.want {
			t.Errorf("inlineDelivery(%s, %d predicates) = %t, want %t", tt.what, len(tt.preds), got, tt.want)
		}
	}
}

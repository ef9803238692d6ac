package apiserver_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"kloop.dev/kloop/apiserver/apiservertest"
)

// stringData is write-only: it is folded into data on create, update and
// patch, overriding data's keys, and never stored.
func TestSecretStringDataFoldsIntoData(t *testing.T) {
	onTargets(t, apiservertest.Options{}, testSecretStringDataFoldsIntoData)
}

func testSecretStringDataFoldsIntoData(t *testing.T, env *apiservertest.Env, cs kubernetes.Interface) {
	ctx := ctxT(t)
	secrets := cs.CoreV1().Secrets(env.Namespace)
	s, err := secrets.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "s1"},
		Data:       map[string][]byte{"kept": []byte("1"), "over": []byte("old")},
		StringData: map[string]string{"over": "new", "added": "hello"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"kept": "1", "over": "new", "added": "hello"}
	check := func(s *corev1.Secret, want map[string]string) {
		t.Helper()
		if len(s.StringData) != 0 {
			t.Errorf("stringData returned: %v", s.StringData)
		}
		if len(s.Data) != len(want) {
			t.Errorf("data = %v, want %v", s.Data, want)
		}
		for k, v := range want {
			if string(s.Data[k]) != v {
				t.Errorf("data[%s] = %q, want %q", k, s.Data[k], v)
			}
		}
	}
	check(s, want)
	got, err := secrets.Get(ctx, "s1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check(got, want)

	got.StringData = map[string]string{"kept": "2"}
	upd, err := secrets.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want["kept"] = "2"
	check(upd, want)

	patched, err := secrets.Patch(ctx, "s1", types.MergePatchType, []byte(`{"stringData":{"p":"q"}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want["p"] = "q"
	check(patched, want)
}

package codecs_test

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cbordirect "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"

	"github.com/tabula-dev/tabula/codecs"
)

// A CBOR list written around its items' own encodings is the same data
// item as kube's encoder makes of the whole typed list, for empty lists,
// lists whose item count needs a longer head, and list metadata with
// continue and remainingItemCount (an empty list has an empty array, as
// kube-apiserver answers it).
func TestCBORListMatchesKubeEncoder(t *testing.T) {
	c, _ := fuzzCodec(t)
	left := int64(7)
	for _, n := range []int{0, 1, 23, 24, 300} {
		list := &corev1.ConfigMapList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"},
			ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "abc", RemainingItemCount: &left}, Items: []corev1.ConfigMap{}}
		var items [][]byte
		for i := 0; i < n; i++ {
			cm := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("cm", i), Labels: map[string]string{"i": fmt.Sprint(i)}}, Data: map[string]string{"k": "v"}}
			list.Items = append(list.Items, cm)
			b, err := c.CBORBytes(&cm)
			if err != nil {
				t.Fatal(err)
			}
			items = append(items, codecs.CBORItem(b))
		}
		var got bytes.Buffer
		if err := codecs.WriteCBORList(&got, "v1", "ConfigMapList", &list.ListMeta, false, items); err != nil {
			t.Fatal(err)
		}
		want, err := c.CBORBytes(list)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(got.Bytes(), want[:3]) {
			t.Fatalf("%d items: no self-described tag: %x", n, got.Bytes()[:8])
		}
		var g, w any
		if err := cbordirect.Unmarshal(got.Bytes(), &g); err != nil {
			t.Fatalf("%d items: %v", n, err)
		}
		if err := cbordirect.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("%d items:\n got  %v\n want %v", n, g, w)
		}
	}
}

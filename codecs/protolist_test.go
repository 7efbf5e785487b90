package codecs_test

import (
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tabula-dev/tabula/codecs"
	"github.com/tabula-dev/tabula/schema"
)

// The streaming list writer produces the serializer's exact bytes.
func TestProtobufListWriterMatchesSerializer(t *testing.T) {
	cm := func(name string) corev1.ConfigMap {
		return corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: "7"}, Data: map[string]string{"k": name}}
	}
	for _, items := range [][]corev1.ConfigMap{nil, {cm("a")}, {cm("a"), cm("b"), cm("c")}} {
		lm := metav1.ListMeta{ResourceVersion: "42", Continue: "tok"}
		list := &corev1.ConfigMapList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"}, ListMeta: lm, Items: items}
		want, err := codecs.New(schema.NewScheme(), codecs.Options{}).ProtobufBytes(list)
		if err != nil {
			t.Fatal(err)
		}
		var lw codecs.ProtobufListWriter
		for i := range items {
			b, err := items[i].Marshal()
			if err != nil {
				t.Fatal(err)
			}
			lw.AddEncoded(b)
		}
		var got bytes.Buffer
		if err := lw.WriteTo(&got, "v1", "ConfigMapList", &lm); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("%d items: streamed\n%x\nwant\n%x", len(items), got.Bytes(), want)
		}
	}
}

// One object written from its own encoding matches the serializer too.
func TestWriteProtobufObjectMatchesSerializer(t *testing.T) {
	for _, cm := range []*corev1.ConfigMap{
		{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}},
		{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "7"},
			Data: map[string]string{"k": string(bytes.Repeat([]byte("v"), 300))}},
	} {
		want, err := codecs.New(schema.NewScheme(), codecs.Options{}).ProtobufBytes(cm)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := cm.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := codecs.WriteProtobufObject(&got, "v1", "ConfigMap", raw); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("written\n%x\nwant\n%x", got.Bytes(), want)
		}
	}
}

package codecs

import (
	"bytes"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	cbordirect "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
)

// CBORItem turns an object's CBOR encoding (CBORBytes) into a list item:
// the self-described tag goes, as kube writes it only before the whole
// answer. The bytes are shared, not copied.
func CBORItem(encoded []byte) []byte { return bytes.TrimPrefix(encoded, selfDescribedCBOR) }

// WriteCBORList writes a list around its items' CBOR encodings (CBORItem),
// as kube's encoder writes a list object: the self-described tag, then a
// map of kind, apiVersion, metadata and items. Items are written as they
// are, so a list of cached encodings costs no encoding of its own. An
// unstructured list's metadata is written as UnstructuredList keeps it
// (continue present even when empty), a typed list's as its ListMeta.
func WriteCBORList(w io.Writer, apiVersion, kind string, lm *metav1.ListMeta, unstructuredList bool, items [][]byte) error {
	var m any = lm
	if unstructuredList {
		ul := &unstructured.UnstructuredList{Object: map[string]any{}}
		ul.SetResourceVersion(lm.ResourceVersion)
		ul.SetContinue(lm.Continue)
		ul.SetRemainingItemCount(lm.RemainingItemCount)
		m = ul.Object["metadata"]
	}
	meta, err := cbordirect.Marshal(m)
	if err != nil {
		return err
	}
	head := make([]byte, 0, 64+len(meta))
	head = append(head, selfDescribedCBOR...)
	head = append(head, 0xa4) // a map of four entries
	head = appendCBORBytes(head, "kind")
	head = appendCBORBytes(head, kind)
	head = appendCBORBytes(head, "apiVersion")
	head = appendCBORBytes(head, apiVersion)
	head = appendCBORBytes(head, "metadata")
	head = append(head, meta...)
	head = appendCBORBytes(head, "items")
	head = appendCBORHead(head, 0x80, uint64(len(items)))
	if _, err := w.Write(head); err != nil {
		return err
	}
	for _, it := range items {
		if _, err := w.Write(it); err != nil {
			return err
		}
	}
	return nil
}

// appendCBORHead appends the head of a data item of major type major
// (its top three bits, 0x80 for an array) and argument n.
func appendCBORHead(b []byte, major byte, n uint64) []byte {
	switch {
	case n < 24:
		return append(b, major|byte(n))
	case n < 1<<8:
		return append(b, major|24, byte(n))
	case n < 1<<16:
		return append(b, major|25, byte(n>>8), byte(n))
	case n < 1<<32:
		return append(b, major|26, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	return append(b, major|27, byte(n>>56), byte(n>>48), byte(n>>40), byte(n>>32), byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

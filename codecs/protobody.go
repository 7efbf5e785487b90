package codecs

import (
	"bytes"

	"google.golang.org/protobuf/encoding/protowire"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
)

// protoMessage is what kube's generated Go types are to Protobuf.
type protoMessage interface {
	Reset()
	Unmarshal([]byte) error
}

// decodeProtobufInto decodes a Protobuf request body straight into into
// when the body is the common case — the "k8s\x00" envelope around an
// object of exactly gvk, uncompressed — and says whether it did. kube's
// serializer first copies the object's bytes out of the envelope
// (runtime.Unknown's Raw), a copy of every written object; here the
// object is decoded from the body where it lies, as the serializer then
// decodes it. Anything else (another kind or version, a missing one, an
// envelope field twice or unknown, a content encoding, a body that does
// not parse or decode) is left to kube's serializer, whose answer and
// error messages are the reference; into is then reset, as kube's
// serializer resets it before decoding.
func decodeProtobufInto(body []byte, gvk runtimeschema.GroupVersionKind, into any) bool {
	pm, ok := into.(protoMessage)
	if !ok || !bytes.HasPrefix(body, protobufPrefix) {
		return false
	}
	var apiVersion, kind, encoding []byte
	var raw []byte
	var seen [5]bool
	b := body[len(protobufPrefix):]
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType || num < 1 || num > 4 || seen[num] {
			return false
		}
		seen[num] = true
		b = b[n:]
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return false
		}
		b = b[n:]
		switch num {
		case 1:
			if apiVersion, kind, ok = typeMetaFields(v); !ok {
				return false
			}
		case 2:
			raw = v
		case 3:
			encoding = v
		}
	}
	if len(encoding) > 0 || string(apiVersion) != gvk.GroupVersion().String() || string(kind) != gvk.Kind {
		return false
	}
	pm.Reset()
	if err := pm.Unmarshal(raw); err != nil {
		pm.Reset()
		return false
	}
	return true
}

// typeMetaFields reads runtime.TypeMeta's apiVersion (1) and kind (2),
// each at most once.
func typeMetaFields(b []byte) (apiVersion, kind []byte, ok bool) {
	var seen [3]bool
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType || num < 1 || num > 2 || seen[num] {
			return nil, nil, false
		}
		seen[num] = true
		b = b[n:]
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, nil, false
		}
		b = b[n:]
		if num == 1 {
			apiVersion = v
		} else {
			kind = v
		}
	}
	return apiVersion, kind, true
}

package codecs

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// The kept parses of Accept headers answer as a fresh parse does, are not
// changed by negotiating with them, and stop growing at acceptCacheMax.
func TestKeptAcceptParses(t *testing.T) {
	headers := []string{
		"application/vnd.kubernetes.protobuf,application/json",
		"application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
		"application/json;q=0.5, application/yaml",
		"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
	}
	offers := []Offer{{Protobuf: true, Views: true, List: true}, {}, {CBOR: true, Views: true, NoTable: true}}
	for _, h := range headers {
		for _, o := range offers {
			want, wantWhy := negotiateFresh(h, o)
			for range 3 { // the first parses and keeps, the others read the kept parse
				got, why := NegotiateWhy(h, o)
				if got != want || why != wantWhy {
					t.Fatalf("Accept %q, offer %+v: %+v %q; a fresh parse gives %+v %q", h, o, got, why, want, wantWhy)
				}
			}
			if kept, ok := acceptCache.Load(h); !ok || !reflect.DeepEqual(kept, parseAccept(h)) {
				t.Fatalf("Accept %q: kept %v, %v; want its parse", h, kept, ok)
			}
		}
	}

	long := "application/json;x=" + strings.Repeat("a", acceptCacheLen)
	NegotiateWhy(long, Offer{})
	if _, ok := acceptCache.Load(long); ok {
		t.Fatalf("a header of %d bytes was kept", len(long))
	}
	for i := range 2 * acceptCacheMax {
		NegotiateWhy(fmt.Sprintf("application/json;v%d=1", i), Offer{})
	}
	n := 0
	acceptCache.Range(func(any, any) bool { n++; return true })
	if n > acceptCacheMax {
		t.Fatalf("%d headers kept; at most %d may be", n, acceptCacheMax)
	}
	if got, _ := NegotiateWhy("application/yaml;v999=1;stream=no", Offer{}); got.MediaType != "" {
		t.Fatalf("an unkept header with an unacceptable stream negotiated %+v; want none", got)
	}
}

// negotiateFresh is NegotiateWhy on a parse of its own, not a kept one.
func negotiateFresh(accept string, offer Offer) (Output, string) {
	saved := map[any]any{}
	acceptCache.Range(func(k, v any) bool { saved[k] = v; return true })
	acceptCache.Clear()
	defer func() {
		acceptCache.Clear()
		for k, v := range saved {
			acceptCache.Store(k, v)
		}
	}()
	// With the cache empty, the parse is fresh; it is dropped again above.
	return NegotiateWhy(accept, offer)
}

// TestAcceptParameters: an Accept entry's parameters count as in kube's
// negotiation: unknown ones (a charset) are passed over, a stream other
// than watch, a server version other than v1, a YAML stream and a group
// or version with no kind to convert to make the entry unacceptable.
func TestAcceptParameters(t *testing.T) {
	// A watch passes a YAML stream entry over for the next.
	if got, why := NegotiateWhy("application/yaml;stream=watch, application/json", Offer{Watch: true, Routed: true}); got.MediaType != JSON {
		t.Errorf("a watch asking a YAML stream, then JSON: %+v %q; want JSON", got, why)
	}
	for _, c := range []struct {
		accept string
		want   string // media type, or "" for 406
	}{
		{"application/json;charset=utf-8", JSON},
		{"application/json; charset=UTF-8", JSON},
		{"application/yaml;charset=utf-8", YAML},
		{"application/json;sv=v1", JSON},
		{"application/json;sv=v2", ""},
		{"application/json;stream=watch", JSON},
		{"application/json;stream=foo", ""},
		{"application/yaml;stream=watch", ""},
		{"application/json;g=meta.k8s.io", ""},
		{"application/json;v=v1", ""},
		{"application/json;stream=foo, application/yaml", YAML},
	} {
		got, _ := Negotiate(c.accept, Offer{Views: true})
		if got.MediaType != c.want {
			t.Errorf("Accept %q: %q; want %q", c.accept, got.MediaType, c.want)
		}
	}
	// An entry kube's router passes (it cuts the parameters off) and its
	// negotiation refuses is kube's negotiation error, which names every
	// form; a view taken and then refused as a watch's stream names the
	// stream forms.
	const every = "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
	for _, c := range []struct {
		accept string
		watch  bool
		want   string
	}{
		{"application/json;stream=foo", false, every},
		{"application/json;sv=v2", false, every},
		{"application/yaml;stream=watch", false, every},
		{"application/json;v=v1", false, every},
		{"application/yaml;as=Table;v=v1;g=meta.k8s.io", true, "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"},
	} {
		got, why := NegotiateWhy(c.accept, Offer{Views: true, Routed: true, Protobuf: true, Watch: c.watch})
		if got.MediaType != "" || why != c.want {
			t.Errorf("Accept %q (watch %v): %+v %q; want %q", c.accept, c.watch, got, why, c.want)
		}
	}
}

// TestAcceptOrderAsKube: entries are taken in the order of kube's parser
// (goautoneg): by q-value, a concrete type before a wildcard whatever
// their q-values, q=0 kept; kube's router refuses a built-in kind an
// Accept with no */* and no form it produces (application/* alone),
// where a custom resource's handler takes application/*.
func TestAcceptOrderAsKube(t *testing.T) {
	routed := Offer{Protobuf: true, Views: true, Routed: true}
	for _, c := range []struct {
		accept string
		offer  Offer
		want   string // media type, or "" for 406
	}{
		{"*/*, application/yaml", routed, YAML},
		{"*/*;q=0.9, application/yaml;q=0.8", routed, YAML},
		{"application/*, application/vnd.kubernetes.protobuf", routed, Protobuf},
		{"application/json;q=0", routed, JSON},
		{"application/*", routed, ""},
		{"application/*", Offer{Views: true}, JSON},
		{"text/html, */*;q=0.1", routed, JSON},
		{"application/vnd.kubernetes.protobuf;q=0.5, application/json", routed, JSON},
	} {
		got, _ := Negotiate(c.accept, c.offer)
		if got.MediaType != c.want {
			t.Errorf("Accept %q (routed %v): %q; want %q", c.accept, c.offer.Routed, got.MediaType, c.want)
		}
	}
}

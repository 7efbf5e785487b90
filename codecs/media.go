package codecs

import (
	"mime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/munnerz/goautoneg"
)

// Wire media types.
const (
	JSON     = "application/json"
	YAML     = "application/yaml"
	Protobuf = "application/vnd.kubernetes.protobuf"
	CBOR     = "application/cbor"
	// CBORSequence is a CBOR watch stream's type: one event after another.
	CBORSequence = "application/cbor-seq"

	JSONPatch      = "application/json-patch+json"
	MergePatch     = "application/merge-patch+json"
	StrategicPatch = "application/strategic-merge-patch+json"
	ApplyPatch     = "application/apply-patch+yaml"
	ApplyPatchCBOR = "application/apply-patch+cbor"
)

// View says what shape of answer the client asked for besides the object.
type View int

const (
	ViewObject View = iota
	ViewTable
	ViewPartialObjectMetadata
	ViewPartialObjectMetadataList
)

// Output is the negotiated response representation.
type Output struct {
	MediaType string // JSON, YAML, Protobuf or CBOR
	View      View
	// ViewVersion is "v1" or "v1beta1" for Table / PartialObjectMetadata.
	ViewVersion string
}

// ContentType is the Content-Type header for the answer: kube-apiserver
// names only the media type, also for Table and PartialObjectMetadata.
func (o Output) ContentType() string { return o.MediaType }

// Offer restricts negotiation for one endpoint.
type Offer struct {
	// Protobuf is false for kinds without a Protobuf form.
	Protobuf bool
	// CBOR is true when the server serves CBOR.
	CBOR bool
	// List is true when the answer is a collection (PartialObjectMetadataList).
	List bool
	// Watch is true for a watch: YAML, which has no stream form, is
	// refused, and the 406 of a built-in kind names the stream forms too.
	Watch bool
	// ListRoute is true for a list, which kube serves on the watch's
	// route: its 406 names the stream forms too.
	ListRoute bool
	// Routed: kube's router picks the endpoint by the Accept header
	// first (a built-in kind's; custom resources are served outside it).
	Routed bool
	// Views is true where Table/PartialObjectMetadata may be served.
	Views bool
	// NoTable refuses the Table view of a kind that has none.
	NoTable bool
	// Kind names the Go type in messages, as kube-apiserver's internal
	// type name ("*core.ConfigMap" or "*core.ConfigMapList").
	Kind string
}

// Streams is the list of a watch's forms, quoted in its 406 messages.
func (o Offer) Streams() string {
	s := "application/json;stream=watch"
	if o.Protobuf {
		s += ", application/vnd.kubernetes.protobuf;stream=watch"
	}
	if o.CBOR {
		s += ", " + CBORSequence
	}
	return s
}

// Available is the list quoted in 406 messages.
func (o Offer) Available() string {
	s := "application/json, application/yaml"
	if o.Protobuf {
		s += ", application/vnd.kubernetes.protobuf"
	}
	if o.CBOR {
		s += ", application/cbor"
	}
	return s
}

// accepted is one Accept entry, in the order kube's negotiation tries
// it (parseAccept).
type accepted struct {
	typ    string
	params map[string]string
}

// A client sends the same Accept header on every request (client-go's is
// fixed per client, kubectl's per command), and parsing one took several
// allocations of every request that names one. So the parses of the first acceptCacheMax
// distinct headers of at most acceptCacheLen bytes are kept, read-only;
// others are parsed each time.
const (
	acceptCacheMax = 128
	acceptCacheLen = 256
)

var (
	acceptCache     sync.Map // header → []accepted
	acceptCacheSize atomic.Int32
)

// parsedAccept is parseAccept, kept (see acceptCache). Callers must not
// change what it returns.
func parsedAccept(h string) []accepted {
	if len(h) > acceptCacheLen {
		return parseAccept(h)
	}
	if a, ok := acceptCache.Load(h); ok {
		return a.([]accepted)
	}
	a := parseAccept(h)
	if acceptCacheSize.Load() < acceptCacheMax {
		if _, loaded := acceptCache.LoadOrStore(strings.Clone(h), a); !loaded {
			acceptCacheSize.Add(1)
		}
	}
	return a
}

// parseAccept orders an Accept header's entries as kube's negotiation
// does, with its parser (goautoneg): by q-value, a concrete type before
// a wildcard, an entry with q=0 kept; types and parameters as written.
func parseAccept(h string) []accepted {
	clauses := goautoneg.ParseAccept(h)
	out := make([]accepted, 0, len(clauses))
	for _, c := range clauses {
		out = append(out, accepted{typ: c.Type + "/" + c.SubType, params: c.Params})
	}
	return out
}

// Negotiate picks the answer's representation from an Accept header the way
// kube-apiserver does: the first acceptable entry by q-value wins; an empty
// header means JSON; false means 406.
func Negotiate(accept string, offer Offer) (Output, bool) {
	out, problem := NegotiateWhy(accept, offer)
	return out, problem == ""
}

// NegotiateWhy is Negotiate that, on failure, returns kube-apiserver's 406
// message: a view (as=Table, PartialObjectMetadata…) that cannot be served
// is named, anything else gets the generic "Not Acceptable" text.
func NegotiateWhy(accept string, offer Offer) (Output, string) {
	if strings.TrimSpace(accept) == "" {
		return Output{MediaType: JSON}, ""
	}
	if offer.Routed && !routeAccepts(accept, offer) {
		return Output{}, offer.notAcceptable()
	}
	viewProblem := ""
	for _, a := range parsedAccept(accept) {
		var mt string
		switch a.typ {
		case JSON, "*/*", "application/*":
			mt = JSON
		case YAML:
			mt = YAML
		case Protobuf:
			if !offer.Protobuf && a.params["as"] == "" {
				continue
			}
			mt = Protobuf
		case CBOR:
			if !offer.CBOR {
				continue
			}
			mt = CBOR
		case CBORSequence:
			// Named as a watch's answer, not as an acceptable one:
			// kube-apiserver 1.35 refuses it so.
			if offer.CBOR {
				viewProblem = "only the following media types are accepted: " + offer.Available()
			}
			continue
		default:
			continue
		}
		// kube's negotiation reads these parameters and passes over the
		// others (charset, say): a stream other than a watch's, or a
		// server version other than v1, makes the entry unacceptable.
		// Past the router, an entry negotiation refuses leaves kube's
		// negotiation error, naming every form, not the router's.
		if s := a.params["stream"]; s != "" && s != "watch" {
			viewProblem = offer.refused()
			continue
		}
		if sv := a.params["sv"]; sv != "" && sv != "v1" {
			viewProblem = offer.refused()
			continue
		}
		as := a.params["as"]
		if as == "" {
			_, g := a.params["g"]
			_, v := a.params["v"]
			if g || v {
				// A group or version to convert to names no kind.
				viewProblem = offer.refused()
				continue
			}
			if a.params["stream"] != "" && mt == YAML {
				viewProblem = offer.refused()
				continue // YAML has no stream form: the entry is passed over
			}
			if offer.Watch && mt == YAML {
				// kube-apiserver's watch negotiation takes the first
				// acceptable form and refuses it when it cannot stream,
				// naming the stream forms.
				return Output{}, "only the following media types are accepted: " + offer.named().Streams()
			}
			return Output{MediaType: mt}, ""
		}
		v := a.params["v"]
		if !offer.Views || a.params["g"] != "meta.k8s.io" || (v != "v1" && v != "v1beta1") {
			viewProblem = offer.refused()
			continue
		}
		if mt == YAML && offer.Watch && (as == "Table" || as == "PartialObjectMetadata" || as == "PartialObjectMetadataList") {
			// Taken as a view, then refused as a stream: kube's watch
			// names the stream forms.
			return Output{}, "only the following media types are accepted: " + offer.named().Streams()
		}
		switch as {
		case "Table":
			if mt == Protobuf || mt == CBOR || offer.NoTable {
				// kube-apiserver 1.35 serves Tables in neither.
				viewProblem = offer.refused()
				continue
			}
			return Output{MediaType: mt, View: ViewTable, ViewVersion: v}, ""
		// kube's negotiation takes either metadata view for any endpoint;
		// the wrong one fails when the answer is converted, so a later
		// entry is not tried.
		case "PartialObjectMetadata":
			if offer.List {
				return Output{}, "you requested PartialObjectMetadata, but the requested object is a list (" + offer.Kind + ")"
			}
			return Output{MediaType: mt, View: ViewPartialObjectMetadata, ViewVersion: v}, ""
		case "PartialObjectMetadataList":
			if !offer.List {
				return Output{}, "you requested PartialObjectMetadataList, but the requested object is not a list (" + offer.Kind + ")"
			}
			return Output{MediaType: mt, View: ViewPartialObjectMetadataList, ViewVersion: v}, ""
		default:
			viewProblem = offer.refused()
		}
	}
	if viewProblem == "" {
		viewProblem = offer.notAcceptable()
	}
	return Output{}, viewProblem
}

// named is the offer as its refusals name it: a custom resource's
// handler (outside kube's router) names Protobuf among its forms, though
// it cannot encode a custom resource in it.
func (o Offer) named() Offer {
	if !o.Routed {
		o.Protobuf = true
	}
	return o
}

// refused is kube's negotiation error for offer: every form named.
// Written only for an entry refused, not on every request's way.
func (o Offer) refused() string {
	return "only the following media types are accepted: " + o.named().Available()
}

// notAcceptable is the 406 text of kube's router for offer's route, or
// of a custom resource's handler, which names its serializers (their
// stream forms for a watch).
func (o Offer) notAcceptable() string {
	if !o.Routed {
		list := o.named().Available()
		if o.Watch {
			list = o.named().Streams()
		}
		return "only the following media types are accepted: " + list
	}
	s := "406: Not Acceptable\n\nAvailable representations: " + o.Available()
	if (o.Watch || o.ListRoute) && o.Protobuf {
		s += ", " + o.Streams()
	}
	return s
}

// routeAccepts is kube's router's check of an Accept header (go-restful
// matchesAccept): some entry, its parameters and q-value cut off, is
// */* or exactly a form the route produces. application/* is not.
func routeAccepts(accept string, o Offer) bool {
	for part := range strings.SplitSeq(accept, ",") {
		typ, _, _ := strings.Cut(part, ";")
		switch strings.TrimSpace(typ) {
		case "*/*", JSON, YAML:
			return true
		case Protobuf:
			if o.Protobuf {
				return true
			}
		case CBOR:
			if o.CBOR {
				return true
			}
		case CBORSequence:
			if o.CBOR && (o.Watch || o.ListRoute) {
				return true
			}
		}
	}
	return false
}

// RouteProduces is kube's router's check of an Accept header for a route
// that produces one media type (kube's OpenID discovery documents): an
// empty header, an entry */* or the type itself, parameters and q-value
// cut off, as routeAccepts.
func RouteProduces(accept, produces string) bool {
	if strings.TrimSpace(accept) == "" {
		return true
	}
	for part := range strings.SplitSeq(accept, ",") {
		typ, _, _ := strings.Cut(part, ";")
		if t := strings.TrimSpace(typ); t == "*/*" || t == produces {
			return true
		}
	}
	return false
}

// BodyType classifies a request Content-Type; "" means JSON, as
// kube-apiserver assumes for a missing header.
func BodyType(contentType string) (string, bool) {
	if strings.TrimSpace(contentType) == "" {
		return JSON, true
	}
	typ, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", false
	}
	switch typ {
	case JSON, YAML, Protobuf, JSONPatch, MergePatch, StrategicPatch, ApplyPatch, ApplyPatchCBOR, CBOR:
		return typ, true
	}
	return typ, false
}

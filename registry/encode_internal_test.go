package registry

import (
	"bytes"
	"math"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tabula-dev/tabula/codecs"
	"github.com/tabula-dev/tabula/schema"
)

// TestEncoderSplicesTheRevision: the bytes an encoder stores are exactly
// what serializing the object with its revision gives, whether the
// revision is spliced into bytes made ahead or (when the object's own
// content holds the placeholder) the object is serialized in the writer;
// an encoder called again for a retried write stamps the new revision and
// leaves the bytes it gave before as they were.
func TestEncoderSplicesTheRevision(t *testing.T) {
	reg := schema.NewBuiltin()
	r := mustNew(Config{Types: reg}).MustLookup("", "v1", "configmaps")
	for name, data := range map[string]map[string]string{
		"plain":              {"k": "v"},
		"placeholder inside": {"resourceVersion": rvPlaceholder, "k": `"resourceVersion":"` + rvPlaceholder + `"`},
	} {
		t.Run(name, func(t *testing.T) {
			cm := &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "3", Labels: map[string]string{"l": "1"}},
				Data:       data,
			}
			enc := r.encoder(cm)
			if cm.ResourceVersion != "3" {
				t.Fatalf("making the encoder left resourceVersion %q; want the object's own 3", cm.ResourceVersion)
			}
			var earlier [][]byte // each call's bytes, and what they held then
			for _, rev := range []int64{1234567, 7, math.MaxInt64} {
				e, err := enc(rev)
				if err != nil {
					t.Fatal(err)
				}
				want := cm.DeepCopy()
				if want.ResourceVersion != strconv.FormatInt(rev, 10) {
					t.Fatalf("object's resourceVersion %q after encoding revision %d", want.ResourceVersion, rev)
				}
				wantBytes, err := codecs.StorageBytes(want)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(e.Value, wantBytes) {
					t.Fatalf("revision %d stored\n%s\nwant\n%s", rev, e.Value, wantBytes)
				}
				if e.Labels["l"] != "1" || e.Fields["metadata.name"] != "a" {
					t.Fatalf("labels %v fields %v", e.Labels, e.Fields)
				}
				earlier = append(earlier, e.Value, bytes.Clone(e.Value))
				for i := 0; i < len(earlier); i += 2 {
					if !bytes.Equal(earlier[i], earlier[i+1]) {
						t.Fatalf("the bytes of call %d changed by a later call:\n%s\nwere\n%s", i/2+1, earlier[i], earlier[i+1])
					}
				}
			}
		})
	}
}

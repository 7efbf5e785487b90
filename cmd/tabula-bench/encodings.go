package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/kubernetes"
)

// benchEncodings are the wire encodings compared: the content type a
// client sends and accepts for each.
var benchEncodings = []struct{ name, contentType string }{
	{"json", "application/json"},
	{"protobuf", "application/vnd.kubernetes.protobuf"},
	{"cbor", "application/cbor"},
}

// encodings compares JSON, Protobuf and CBOR on one collection of 1 KiB
// ConfigMaps per -objects size: a whole list and a watch replaying every
// object's creation, each decoded by client-go's typed client in that
// encoding, with the bytes each answer took (uncompressed: the transport
// asks for no gzip, so the figures are the encodings' own).
func (b *bench) encodings(ctx context.Context) error {
	for _, size := range b.o.objects {
		ns := fmt.Sprintf("%s-enc%d", b.ns, size)
		if _, err := b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		defer b.dropNamespace(ns)
		before, err := b.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return err
		}
		if err := b.fill(ctx, ns, size, func(int64) map[string]string { return nil }); err != nil {
			return err
		}
		for _, enc := range benchEncodings {
			cs, counted, answered, err := b.countingClient(enc.contentType)
			if err != nil {
				return err
			}
			if err := b.pagedLists(ctx, cs, counted, ns, size, enc.name); err != nil {
				return err
			}
			// client-go falls back to JSON without a word when CBOR is
			// not allowed to it: the figures must be of what was asked.
			if got := answered.Load(); got != enc.contentType {
				return fmt.Errorf("%s: the server answered %v", enc.name, got)
			}
			var lists latencies
			bytesPerList := int64(0)
			for run := 0; run < 5 && (enc.name != "cbor" || size <= cborMaxItems); run++ {
				counted.Store(0)
				t := time.Now()
				l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					return fmt.Errorf("%s list: %w", enc.name, err)
				}
				lists.add(time.Since(t))
				if len(l.Items) < size {
					return fmt.Errorf("%s list returned %d items; want %d", enc.name, len(l.Items), size)
				}
				bytesPerList = counted.Load()
			}
			if enc.name == "cbor" && size > cborMaxItems {
				b.results = append(b.results, Result{Name: fmt.Sprintf("list %d whole, %s", size, enc.name),
					Note: "not run: client-go 1.35 decodes no CBOR array of more than 1024 items"})
			} else {
				b.results = append(b.results, lists.result(fmt.Sprintf("list %d whole, %s", size, enc.name), 0, fmt.Sprintf("%.1f MiB", float64(bytesPerList)/(1<<20))))
			}

			counted.Store(0)
			t := time.Now()
			w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: before.ResourceVersion})
			if err != nil {
				return fmt.Errorf("%s watch: %w", enc.name, err)
			}
			got := 0
			for got < size {
				select {
				case ev, ok := <-w.ResultChan():
					if !ok {
						return fmt.Errorf("%s watch closed after %d events", enc.name, got)
					}
					if _, isCM := ev.Object.(*corev1.ConfigMap); isCM {
						got++
					}
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			elapsed := time.Since(t)
			w.Stop()
			b.results = append(b.results, Result{Name: fmt.Sprintf("watch replay of %d, %s", size, enc.name), Ops: size,
				PerSecond: float64(size) / elapsed.Seconds(), P50: elapsed,
				Note: fmt.Sprintf("%.1f MiB (p50: the whole replay)", float64(counted.Load())/(1<<20))})
		}
	}
	return nil
}

// cborMaxItems is the longest CBOR array client-go 1.35's decoder takes
// (kube's CBOR decoding limits; raised after 1.35 by kubernetes#135340).
const cborMaxItems = 1024

// pagedLists walks the collection in pages of 500, five times.
func (b *bench) pagedLists(ctx context.Context, cs *kubernetes.Clientset, counted *atomic.Int64, ns string, size int, enc string) error {
	var walks latencies
	var bytes int64
	for run := 0; run < 5; run++ {
		counted.Store(0)
		t := time.Now()
		cont, n := "", 0
		for {
			l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
			if err != nil {
				return fmt.Errorf("%s page: %w", enc, err)
			}
			n += len(l.Items)
			if cont = l.Continue; cont == "" {
				break
			}
		}
		walks.add(time.Since(t))
		if n < size {
			return fmt.Errorf("%s pages held %d items; want %d", enc, n, size)
		}
		bytes = counted.Load()
	}
	b.results = append(b.results, walks.result(fmt.Sprintf("list %d in pages of 500, %s", size, enc), 0, fmt.Sprintf("%.1f MiB", float64(bytes)/(1<<20))))
	return nil
}

// fill creates n 1 KiB ConfigMaps in ns with 32 clients, the i-th
// (from 1) labelled labels(i).
func (b *bench) fill(ctx context.Context, ns string, n int, labels func(i int64) map[string]string) error {
	var made atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := made.Add(1); i <= int64(n); i = made.Add(1) {
				if _, err := b.cs.CoreV1().ConfigMaps(ns).Create(ctx, b.configMap("fill", 1024, labels(i)), metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// allowCBOR lets client-go's clients speak CBOR (its ClientsAllowCBOR
// gate), before any is made: the encodings workload's CBOR client needs
// it, and it changes nothing for clients that name another content type.
func allowCBOR() {
	clientfeatures.ReplaceFeatureGates(cborAllowed{clientfeatures.FeatureGates()})
}

type cborAllowed struct{ clientfeatures.Gates }

func (g cborAllowed) Enabled(k clientfeatures.Feature) bool {
	return k == clientfeatures.ClientsAllowCBOR || g.Gates.Enabled(k)
}

// countingClient is a typed clientset sending and accepting contentType
// only, without gzip, counting the response bytes it reads; answered is
// the Content-Type of its last answer.
func (b *bench) countingClient(contentType string) (cs *kubernetes.Clientset, counted *atomic.Int64, answered *atomic.Value, err error) {
	cfg, err := restConfig(b.o)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg.Timeout = 2 * time.Minute
	cfg.ContentType = contentType
	cfg.AcceptContentTypes = contentType
	cfg.DisableCompression = true
	counted, answered = new(atomic.Int64), new(atomic.Value)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTrip(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if err == nil {
				resp.Body = &countingBody{ReadCloser: resp.Body, n: counted}
				answered.Store(resp.Header.Get("Content-Type"))
			}
			return resp, err
		})
	})
	cs, err = kubernetes.NewForConfig(cfg)
	return cs, counted, answered, err
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// countingBody adds the bytes read through it to n.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	k, err := c.ReadCloser.Read(p)
	c.n.Add(int64(k))
	return k, err
}

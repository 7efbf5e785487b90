package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/version"

	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/server"
	"github.com/tabula-dev/tabula/sqlstore"
)

// TestKubernetesService: the kubernetes Service takes the range's first
// address and port 443; its Endpoints and EndpointSlice list every
// replica serving on the database; a replica that shuts down leaves them
// at once, and one that stops renewing its Lease once the Lease expires.
func TestKubernetesService(t *testing.T) {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := sqlstore.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "state.db"), sqlstore.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	start := func(ip string) (*server.Server, context.CancelFunc) {
		srv, err := server.New(server.Config{Store: st, Registry: schema.NewBuiltin(), Version: version.Info{GitVersion: "v1.35.0"}, Logger: quiet,
			Advertise: netip.MustParseAddrPort(ip + ":7443"), EndpointLeaseDuration: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		if err := srv.RunControllers(cctx); err != nil {
			t.Fatal(err)
		}
		return srv, cancel
	}
	a, stopA := start("192.0.2.1")
	defer stopA()
	_, stopB := start("192.0.2.2")

	get := func(path string, into any) int {
		req := httptest.NewRequest("GET", path, nil)
		rec := httptest.NewRecorder()
		a.Handler().ServeHTTP(rec, req)
		if rec.Code == http.StatusOK {
			if err := json.Unmarshal(rec.Body.Bytes(), into); err != nil {
				t.Fatal(err)
			}
		}
		return rec.Code
	}
	type endpoints struct {
		Subsets []struct {
			Addresses []struct{ IP string }
			Ports     []struct {
				Name string
				Port int32
			}
		}
	}
	type slice struct {
		AddressType string
		Endpoints   []struct{ Addresses []string }
		Ports       []struct{ Port int32 }
	}
	listed := func() (eps, slc []string) {
		var e endpoints
		var s slice
		if get("/api/v1/namespaces/default/endpoints/kubernetes", &e) != http.StatusOK ||
			get("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes", &s) != http.StatusOK {
			return nil, nil
		}
		for _, ss := range e.Subsets {
			for _, ad := range ss.Addresses {
				eps = append(eps, ad.IP)
			}
			if len(ss.Ports) != 1 || ss.Ports[0].Name != "https" || ss.Ports[0].Port != 7443 {
				t.Errorf("endpoints ports %+v; want https 7443", ss.Ports)
			}
		}
		for _, ep := range s.Endpoints {
			slc = append(slc, ep.Addresses...)
		}
		return eps, slc
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 20s", what)
			}
			<-time.After(20 * time.Millisecond)
		}
	}
	want := func(ips ...string) func() bool {
		return func() bool {
			e, s := listed()
			return slices.Equal(e, ips) && slices.Equal(s, ips)
		}
	}

	var svc struct {
		Spec struct {
			ClusterIP string
			Ports     []struct {
				Name       string
				Port       int32
				TargetPort int32
			}
		}
	}
	eventually("the kubernetes Service exists", func() bool { return get("/api/v1/namespaces/default/services/kubernetes", &svc) == http.StatusOK })
	if svc.Spec.ClusterIP != "10.96.0.1" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 || svc.Spec.Ports[0].TargetPort != 7443 || svc.Spec.Ports[0].Name != "https" {
		t.Fatalf("kubernetes Service %+v; want 10.96.0.1, https 443 → 7443", svc.Spec)
	}
	eventually("both replicas are listed", want("192.0.2.1", "192.0.2.2"))
	// Each replica's Lease carries kube-apiserver's identity label, by
	// which clients count the API servers.
	var leases struct {
		Items []struct{ Metadata struct{ Name string } }
	}
	if get("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases?labelSelector=apiserver.kubernetes.io%2Fidentity%3Dkube-apiserver,kubernetes.io%2Fhostname", &leases) != http.StatusOK ||
		len(leases.Items) != 2 {
		t.Errorf("identity Leases: %+v; want the two replicas'", leases)
	}

	// The default ServiceCIDR names the range, Ready, as kube-apiserver's
	// (the e2e suite's ServiceCIDR spec reads it).
	var cidr struct {
		Spec   struct{ CIDRs []string }
		Status struct {
			Conditions []struct{ Type, Status, Message string }
		}
	}
	eventually("the default ServiceCIDR is Ready", func() bool {
		return get("/apis/networking.k8s.io/v1/servicecidrs/kubernetes", &cidr) == http.StatusOK && len(cidr.Status.Conditions) == 1
	})
	if c := cidr.Status.Conditions[0]; !slices.Equal(cidr.Spec.CIDRs, []string{"10.96.0.0/12"}) || c.Type != "Ready" || c.Status != "True" ||
		c.Message != "Kubernetes default Service CIDR is ready" {
		t.Fatalf("ServiceCIDR kubernetes: %+v; want 10.96.0.0/12, Ready", cidr)
	}

	stopB() // a clean shutdown removes the replica at once
	eventually("the stopped replica leaves", want("192.0.2.1"))

	// A replica that stops renewing (crashed) drops out when its Lease expires.
	lease := `{"metadata":{"name":"apiserver-192-0-2-3","labels":{"tabula.dev/apiserver-endpoint":"true"}},
		"spec":{"holderIdentity":"192.0.2.3","leaseDurationSeconds":1,"renewTime":"` + time.Now().UTC().Format("2006-01-02T15:04:05.000000Z") + `"}}`
	req := httptest.NewRequest("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases", strings.NewReader(lease))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated {
		t.Fatalf("create lease: %d %s", rec.Code, rec.Body)
	}
	eventually("the crashed replica is listed while its Lease lives", want("192.0.2.1", "192.0.2.3"))
	eventually("the crashed replica leaves when its Lease expires", want("192.0.2.1"))
}

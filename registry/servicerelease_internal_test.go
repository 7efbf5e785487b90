package registry

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/sqlstore"
)

// TestServiceReleaseLeavesOthersClaims: a Service gives back only the
// cluster IPs and node ports it holds the claims of. Data an older Tabula
// stored may have two Services naming one value (a LoadBalancer that
// allocated no node ports did not claim those it named); the one without
// the claim must not free the other's value when it is deleted or
// changed.
func TestServiceReleaseLeavesOthersClaims(t *testing.T) {
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, "sqlite://:memory:", sqlstore.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	g := mustNew(Config{Store: st, Types: schema.NewBuiltin()})
	a := newServiceAllocator(g, ServiceRanges{ClusterIPs: netip.MustParsePrefix("10.96.0.0/24"), NodePorts: PortRange{Base: 30000, Size: 100}})
	holder := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "holder"}}
	other := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other"}}
	ip := netip.MustParseAddr("10.96.0.7")
	ipTaken := func() bool {
		_, err := a.ipAddresses().GetRecord(ctx, "", ip.String())
		return err == nil
	}
	if ok, err := a.claimIP(ctx, holder, ip); !ok || err != nil {
		t.Fatalf("claim IP: %v %v", ok, err)
	}
	if ok, err := a.recordPort(ctx, holder, 30001, false); !ok || err != nil {
		t.Fatalf("claim port: %v %v", ok, err)
	}
	a.releaseIP(ctx, ip.String(), other)
	a.releasePort(ctx, 30001, other)
	if !ipTaken() {
		t.Errorf("another Service's release freed %s", ip)
	}
	if ok, _ := a.recordPort(ctx, other, 30001, true); ok {
		t.Errorf("another Service's release freed node port 30001")
	}
	a.releaseIP(ctx, ip.String(), holder)
	a.releasePort(ctx, 30001, holder)
	if ipTaken() {
		t.Errorf("the holder's release left %s claimed", ip)
	}
	if ok, _ := a.recordPort(ctx, other, 30001, true); !ok {
		t.Errorf("the holder's release left node port 30001 claimed")
	}
}

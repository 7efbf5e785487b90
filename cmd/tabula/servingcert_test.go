package main

import (
	"context"
	"crypto/tls"
	"net"
	"slices"
	"strings"
	"testing"
)

// TestServingCertificateNamesTheKubernetesService: in-cluster clients
// verify the server as kubernetes.default.svc or the Service's cluster IP.
func TestServingCertificateNamesTheKubernetesService(t *testing.T) {
	m := NewMain()
	if err := m.ParseFlags([]string{"--db", "sqlite://:memory:", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0",
		"--service-cluster-ip-range", "10.100.0.0/16", "--log-level", "error"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	conn, err := tls.Dial("tcp", m.Addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cert := conn.ConnectionState().PeerCertificates[0]
	for _, name := range []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"} {
		if !slices.Contains(cert.DNSNames, name) {
			t.Errorf("serving certificate lacks %s: %v", name, cert.DNSNames)
		}
	}
	if !slices.ContainsFunc(cert.IPAddresses, func(ip net.IP) bool { return ip.Equal(net.ParseIP("10.100.0.1")) }) {
		t.Errorf("serving certificate lacks the kubernetes Service's IP 10.100.0.1: %v", cert.IPAddresses)
	}
}

// TestServingCertificateNamesTheListenAddress: a server listening on a
// specific IP, with no --advertise-address, is verified at that IP (its
// kubeconfig's) and at the address it advertises (the host's first), as
// kube-apiserver's self-signed certificate names its advertise address.
func TestServingCertificateNamesTheListenAddress(t *testing.T) {
	_, cs := serve(t, "--listen", "127.0.0.2:0")
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		t.Fatalf("the kubeconfig's client at 127.0.0.2: %v", err)
	}
	adv, err := advertiseAddress("", "127.0.0.2:0")
	if err != nil || !adv.Addr().IsValid() {
		return // no address other than loopback on this host: nothing advertised
	}
	conn, err := tls.Dial("tcp", strings.TrimPrefix(cs.RESTClient().Get().URL().Host, "https://"), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cert := conn.ConnectionState().PeerCertificates[0]
	if !slices.ContainsFunc(cert.IPAddresses, func(ip net.IP) bool { return ip.Equal(net.IP(adv.Addr().AsSlice())) }) {
		t.Errorf("serving certificate lacks the advertised %s: %v", adv.Addr(), cert.IPAddresses)
	}
}

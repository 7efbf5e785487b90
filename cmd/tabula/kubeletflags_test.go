package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// logKubelet is a kubelet's log endpoint behind TLS that demands a client
// certificate of clientCAs; it answers with the certificate's name.
func logKubelet(t *testing.T, serving tls.Certificate, clientCAs *x509.CertPool) int32 {
	t.Helper()
	k := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s for %s", r.URL.Path, r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	k.TLS = &tls.Config{Certificates: []tls.Certificate{serving}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCAs}
	k.StartTLS()
	t.Cleanup(k.Close)
	_, port, _ := net.SplitHostPort(k.Listener.Addr().String())
	n, _ := strconv.Atoi(port)
	return int32(n)
}

// podLog makes a Node whose kubelet is at 127.0.0.1:port and a Pod on it,
// and reads the Pod's log through the server.
func podLog(t *testing.T, cs *kubernetes.Clientset, port int32) (string, error) {
	t.Helper()
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: port}},
	}}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rc, err := cs.CoreV1().Pods("default").GetLogs("p", &corev1.PodLogOptions{}).Stream(ctx)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	return string(b), err
}

// TestKubeletClientDefault: with no --kubelet-* flags the server
// presents a client certificate its own CA issued (a kubelet trusting the
// cluster CA, as kubeadm sets kubelets up, accepts it) and does not
// verify the kubelet's serving certificate, as kube-apiserver without
// --kubelet-certificate-authority.
func TestKubeletClientDefault(t *testing.T) {
	dir := t.TempDir()
	_, cs := serve(t, "--data-dir", dir)
	caPEM, err := os.ReadFile(filepath.Join(dir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	clusterCA := x509.NewCertPool()
	clusterCA.AppendCertsFromPEM(caPEM)
	self := newTestCA(t, "kubelet-self-signed")
	crt, key := self.issue(t, t.TempDir(), "kubelet", &x509.Certificate{Subject: pkix.Name{CommonName: "n1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature})
	serving, err := tls.LoadX509KeyPair(crt, key)
	if err != nil {
		t.Fatal(err)
	}
	out, err := podLog(t, cs, logKubelet(t, serving, clusterCA))
	if err != nil || out != "/containerLogs/default/p/c for kube-apiserver-kubelet-client" {
		t.Errorf("log through the default kubelet client: %q %v", out, err)
	}
}

// TestKubeletClientFlags: --kubelet-client-certificate and -key name the
// certificate presented, --kubelet-certificate-authority verifies the
// kubelet (one it does not sign fails the request, kube's 500), and bad
// settings stop start-up rather than the first kubectl logs.
func TestKubeletClientFlags(t *testing.T) {
	dir := t.TempDir()
	company := newTestCA(t, "company-ca")
	clientCrt, clientKey := company.issue(t, dir, "apiserver", &x509.Certificate{Subject: pkix.Name{CommonName: "company-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature})
	servingCrt, servingKey := company.issue(t, dir, "kubelet", &x509.Certificate{Subject: pkix.Name{CommonName: "n1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature})
	caFile := filepath.Join(dir, "company-ca.crt")
	if err := os.WriteFile(caFile, company.pem, 0o644); err != nil {
		t.Fatal(err)
	}
	serving, err := tls.LoadX509KeyPair(servingCrt, servingKey)
	if err != nil {
		t.Fatal(err)
	}
	companyPool := x509.NewCertPool()
	companyPool.AddCert(company.cert)

	_, cs := serve(t, "--kubelet-client-certificate", clientCrt, "--kubelet-client-key", clientKey, "--kubelet-certificate-authority", caFile,
		"--kubelet-preferred-address-types", "InternalIP,Hostname")
	out, err := podLog(t, cs, logKubelet(t, serving, companyPool))
	if err != nil || out != "/containerLogs/default/p/c for company-apiserver" {
		t.Errorf("log with the given client certificate: %q %v", out, err)
	}

	// A kubelet whose certificate the given CA did not sign.
	other := newTestCA(t, "other-ca")
	oCrt, oKey := other.issue(t, dir, "impostor", &x509.Certificate{Subject: pkix.Name{CommonName: "n1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature})
	impostor, err := tls.LoadX509KeyPair(oCrt, oKey)
	if err != nil {
		t.Fatal(err)
	}
	_, cs2 := serve(t, "--kubelet-certificate-authority", caFile)
	if _, err := podLog(t, cs2, logKubelet(t, impostor, nil)); err == nil || !strings.Contains(err.Error(), "x509") {
		t.Errorf("log from a kubelet the CA did not sign: %v; want a certificate error", err)
	}

	for _, bad := range [][]string{
		{"--kubelet-client-certificate", clientCrt},
		{"--kubelet-client-certificate", clientCrt, "--kubelet-client-key", servingKey},
		{"--kubelet-certificate-authority", clientKey},
		{"--kubelet-preferred-address-types", "InternalIP,Public"},
	} {
		m := NewMain()
		if err := m.ParseFlags(append([]string{"--db", "sqlite://:memory:", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--log-level", "error"}, bad...)); err != nil {
			t.Fatal(err)
		}
		if err := m.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "kubelet") {
			m.Close()
			t.Errorf("%v: start-up error %v; want one naming the kubelet flag", bad, err)
		}
	}
}

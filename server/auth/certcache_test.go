package auth

import (
	"crypto/x509"
	"slices"
	"testing"
	"time"
)

func TestCertCacheExpiresWithTheChain(t *testing.T) {
	p := mustPKI(t, t.TempDir())
	leaf, err := x509.ParseCertificate(p.AdminCert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	chains, err := leaf.Verify(x509.VerifyOptions{Roots: p.CAPool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		t.Fatal(err)
	}
	until := chainExpiry(chains)
	if until.IsZero() || until.After(leaf.NotAfter) {
		t.Fatalf("expiry %v, want no later than the leaf's NotAfter %v", until, leaf.NotAfter)
	}

	var c certCache
	key := chainKey([]*x509.Certificate{leaf})
	c.put(key, &User{Name: "tabula-admin", Groups: []string{"system:masters"}}, until)

	u, ok := c.get(key, until.Add(-time.Second))
	if !ok || u.Name != "tabula-admin" || !slices.Equal(u.Groups, []string{"system:masters"}) {
		t.Fatalf("before expiry: got %+v, %v", u, ok)
	}
	// Callers add groups to the user they get; the cached one is unchanged.
	u.Groups = append(u.Groups, GroupAuthenticated)
	if u2, _ := c.get(key, until.Add(-time.Second)); !slices.Equal(u2.Groups, []string{"system:masters"}) {
		t.Fatalf("cached groups changed to %v", u2.Groups)
	}
	if _, ok := c.get(key, until); ok {
		t.Fatal("entry served at its expiry; the chain must be verified again")
	}
	if _, ok := c.get(chainKey(nil), until.Add(-time.Second)); ok {
		t.Fatal("a different chain hit the cache")
	}
}

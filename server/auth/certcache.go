package auth

import (
	"crypto/sha256"
	"crypto/x509"
	"slices"
	"sync"
	"time"
)

// certCacheSize bounds the remembered chains; clients reuse a handful of
// certificates, so a full cache means churn and is simply emptied.
const certCacheSize = 1024

// certCache maps a presented certificate chain to the user it proved, until
// the first certificate of the verified chain expires. The CA pool is fixed
// for the Authenticator's life, so a chain that verified once verifies again
// until then.
type certCache struct {
	mu      sync.Mutex
	entries map[[sha256.Size]byte]certEntry
}

type certEntry struct {
	user  User
	until time.Time
}

// chainKey hashes the certificates exactly as the client presented them.
func chainKey(certs []*x509.Certificate) [sha256.Size]byte {
	h := sha256.New()
	for _, c := range certs {
		h.Write(c.Raw)
	}
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

// chainExpiry is when the earliest certificate of any verified chain lapses.
func chainExpiry(chains [][]*x509.Certificate) time.Time {
	var until time.Time
	for _, chain := range chains {
		for _, c := range chain {
			if until.IsZero() || c.NotAfter.Before(until) {
				until = c.NotAfter
			}
		}
	}
	return until
}

// get returns a copy of the cached user, so callers may add groups to it.
func (c *certCache) get(k [sha256.Size]byte, now time.Time) (*User, bool) {
	c.mu.Lock()
	e, ok := c.entries[k]
	c.mu.Unlock()
	if !ok || !now.Before(e.until) {
		return nil, false
	}
	u := e.user
	u.Groups = slices.Clone(u.Groups)
	return &u, true
}

func (c *certCache) put(k [sha256.Size]byte, u *User, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || len(c.entries) >= certCacheSize {
		c.entries = make(map[[sha256.Size]byte]certEntry)
	}
	e := certEntry{user: *u, until: until}
	e.user.Groups = slices.Clone(u.Groups)
	c.entries[k] = e
}

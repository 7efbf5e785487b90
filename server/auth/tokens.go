package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// tokenEntry is one line of a token file. Only the SHA-256 of the token is
// kept: comparing fixed-length digests makes the constant-time compare
// independent of token length, and no plaintext token sits in memory.
type tokenEntry struct {
	digest [sha256.Size]byte
	user   User
}

// loadTokenFile reads a kube-apiserver --token-auth-file.
func loadTokenFile(path string) ([]tokenEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	return parseTokens(f, path)
}

// parseTokens parses the kube-apiserver static token CSV format:
//
//	token,user,uid[,"group1,group2"]
//
// Groups are optional; quoting the fourth column lets it hold several
// comma-separated groups, and columns after it are ignored as kube-apiserver
// does. Lines starting with # and blank lines are skipped. Unlike
// kube-apiserver, which only warns, an empty token, empty user name or a
// duplicate token is an error: each is a mistake that would otherwise
// silently lock a user out or let the wrong one in.
func parseTokens(r io.Reader, name string) ([]tokenEntry, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1 // the group column is optional
	cr.TrimLeadingSpace = true
	var entries []tokenEntry
	seen := map[[sha256.Size]byte]int{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return entries, nil
		}
		if err != nil {
			// csv.ParseError already names the line.
			return nil, fmt.Errorf("token file %s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		// encoding/csv skips empty lines but not whitespace-only ones.
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if len(rec) < 3 {
			return nil, fmt.Errorf("token file %s: line %d: want at least 3 columns (token,user,uid), found %d", name, line, len(rec))
		}
		token, userName, uid := strings.TrimSpace(rec[0]), strings.TrimSpace(rec[1]), strings.TrimSpace(rec[2])
		if token == "" {
			return nil, fmt.Errorf("token file %s: line %d: empty token", name, line)
		}
		if userName == "" {
			return nil, fmt.Errorf("token file %s: line %d: empty user name", name, line)
		}
		e := tokenEntry{digest: sha256.Sum256([]byte(token)), user: User{Name: userName, UID: uid}}
		if prev, dup := seen[e.digest]; dup {
			return nil, fmt.Errorf("token file %s: line %d: duplicate token (first on line %d)", name, line, prev)
		}
		seen[e.digest] = line
		if len(rec) >= 4 {
			for _, g := range strings.Split(rec[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					e.user.Groups = append(e.user.Groups, g)
				}
			}
		}
		entries = append(entries, e)
	}
}

// lookupToken finds the entry for token. It compares against every entry
// without stopping early so timing reveals neither a match nor its position.
func lookupToken(entries []tokenEntry, token string) (User, bool) {
	digest := sha256.Sum256([]byte(token))
	match := -1
	for i := range entries {
		if subtle.ConstantTimeCompare(entries[i].digest[:], digest[:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return User{}, false
	}
	return entries[match].user, true
}

package auth

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseTokens(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    map[string]User // token -> user
		wantErr string
	}{
		{
			name: "basic lines, comments and blanks",
			in: "# static tokens\n" +
				"\n" +
				"abc123,alice,uid-1\n" +
				"   \n" +
				"def456,bob,uid-2,dev\n",
			want: map[string]User{
				"abc123": {Name: "alice", UID: "uid-1"},
				"def456": {Name: "bob", UID: "uid-2", Groups: []string{"dev"}},
			},
		},
		{
			name: "quoted groups",
			in:   `tok,carol,uid-3,"system:masters,ops, dev"` + "\n",
			want: map[string]User{
				"tok": {Name: "carol", UID: "uid-3", Groups: []string{"system:masters", "ops", "dev"}},
			},
		},
		{
			name: "empty uid and empty group column",
			in:   "tok,dave,,\n",
			want: map[string]User{"tok": {Name: "dave"}},
		},
		{
			name: "extra columns ignored, no trailing newline",
			in:   "tok,erin,uid-5,g1,ignored",
			want: map[string]User{"tok": {Name: "erin", UID: "uid-5", Groups: []string{"g1"}}},
		},
		{
			name:    "too few columns names the line",
			in:      "# comment\nok,frank,uid\nbroken,onlyuser\n",
			wantErr: "line 3: want at least 3 columns",
		},
		{
			name:    "empty token",
			in:      ",gina,uid\n",
			wantErr: "line 1: empty token",
		},
		{
			name:    "empty user",
			in:      "tok,,uid\n",
			wantErr: "line 1: empty user name",
		},
		{
			name:    "duplicate token",
			in:      "tok,a,1\ntok,b,2\n",
			wantErr: "line 2: duplicate token (first on line 1)",
		},
		{
			name:    "unterminated quote",
			in:      "tok,a,1,\"g1,g2\n",
			wantErr: "line 1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entries, err := parseTokens(strings.NewReader(tt.in), "tokens.csv")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "tokens.csv") {
					t.Fatalf("err = %v, want containing %q and the file name", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != len(tt.want) {
				t.Fatalf("got %d entries, want %d", len(entries), len(tt.want))
			}
			for token, want := range tt.want {
				got, ok := lookupToken(entries, token)
				if !ok {
					t.Fatalf("token %q not found", token)
				}
				if got.Name != want.Name || got.UID != want.UID || !slices.Equal(got.Groups, want.Groups) {
					t.Errorf("token %q: got %+v, want %+v", token, got, want)
				}
			}
			if _, ok := lookupToken(entries, "nope"); ok {
				t.Error("unknown token matched")
			}
		})
	}
}

func TestNewAuthenticatorTokenFileErrors(t *testing.T) {
	if _, err := NewAuthenticator(Options{TokenFile: filepath.Join(t.TempDir(), "missing.csv")}); err == nil {
		t.Error("missing token file: want error")
	}
	path := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(path, []byte("a,b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewAuthenticator(Options{TokenFile: path}); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("malformed token file: err = %v", err)
	}
}

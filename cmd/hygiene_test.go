package cmd

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pkg is what `go list -json` says of one package of this module.
type pkg struct {
	ImportPath string
	Dir        string
	Imports    []string
	Deps       []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "github.com/tabula-dev/tabula/...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages; want the whole module", len(pkgs))
	}
	return pkgs
}

// Every package says what it owns in a doc.go.
func TestEveryPackageHasDocGo(t *testing.T) {
	for _, p := range listPackages(t) {
		if _, err := os.Stat(filepath.Join(p.Dir, "doc.go")); err != nil {
			t.Errorf("%s has no doc.go", p.ImportPath)
		}
	}
}

// The import rules of DESIGN.md §1: server never imports the storage
// implementation, sqlstore imports nothing of Tabula above it, database/sql
// stays in sqlstore, and kube-apiserver's generic server and etcd storage
// are not used at all.
func TestImportRules(t *testing.T) {
	const mod = "github.com/tabula-dev/tabula/"
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(p.ImportPath, mod)
		for _, imp := range p.Imports {
			switch {
			case strings.HasPrefix(rel, "server") && imp == mod+"sqlstore":
				t.Errorf("%s imports sqlstore; it must use its own Store interface", p.ImportPath)
			case strings.HasPrefix(rel, "sqlstore") && strings.HasPrefix(imp, mod) &&
				!strings.HasPrefix(imp, mod+"sqlstore") && imp != mod+"migrations":
				t.Errorf("%s imports %s; sqlstore uses only migrations", p.ImportPath, imp)
			case imp == "database/sql" && !strings.HasPrefix(rel, "sqlstore"):
				t.Errorf("%s imports database/sql outside sqlstore", p.ImportPath)
			}
		}
		for _, d := range p.Deps {
			if strings.HasPrefix(d, "k8s.io/apiserver/pkg/registry") || strings.HasPrefix(d, "k8s.io/apiserver/pkg/storage") ||
				strings.HasPrefix(d, "go.etcd.io/etcd") {
				t.Errorf("%s depends on %s, which Tabula replaces", p.ImportPath, d)
			}
		}
	}
}

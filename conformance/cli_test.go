package conformance

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestServeHelp runs `tabula serve --help` (and -h) as a user would: it
// exits 0 and lists every flag with its TABULA_ environment variable, and
// the flags it lists are exactly those of the README's table.
func TestServeHelp(t *testing.T) {
	if !ownServerOnly(t, "the tabula binary's help is not part of that server") {
		return
	}
	recordOutcome(t, scenarioRow(t, ""), "binary")
	bin, err := tabulaBinary()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	// README rows: | `--flag` | `TABULA_FLAG` | default | meaning |
	rows := regexp.MustCompile("(?m)^\\| `--([a-z0-9-]+)` \\| `(TABULA_[A-Z0-9_]+)` \\|").FindAllSubmatch(readme, -1)
	if len(rows) < 10 {
		t.Fatalf("README's flag table has %d rows; want every flag of tabula serve", len(rows))
	}
	for _, arg := range []string{"--help", "-h"} {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(bin, "serve", arg)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("tabula serve %s: %v; want exit 0\n%s", arg, err, stderr.Bytes())
		}
		help := stdout.String()
		for _, row := range rows {
			flagName, env := string(row[1]), string(row[2])
			if !strings.Contains(help, "--"+flagName+" ") || !strings.Contains(help, "env "+env) {
				t.Errorf("tabula serve %s does not list --%s with %s:\n%s", arg, flagName, env, help)
			}
		}
		listed := regexp.MustCompile(`(?m)^  --([a-z0-9-]+) `).FindAllStringSubmatch(help, -1)
		if len(listed) != len(rows) {
			t.Errorf("tabula serve %s lists %d flags, the README %d: keep the README's table complete", arg, len(listed), len(rows))
		}
	}
}

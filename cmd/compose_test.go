package cmd_test

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestComposeWiring: docker compose cannot run on the CI machines, so the
// stack's wiring is checked here: two Tabula replicas on the PostgreSQL
// service with one token, health-checked on /readyz, the second after the
// first, each with its own data directory, and one address in front that
// sends to both.
func TestComposeWiring(t *testing.T) {
	b, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	type service struct {
		Image       string
		Build       any
		Environment map[string]string
		DependsOn   map[string]struct{ Condition string } `json:"depends_on"`
		Healthcheck struct{ Test []string }
		Volumes     []string
		Ports       []string
		Configs     []struct{ Source, Target string }
	}
	var compose struct {
		Services map[string]service
		Configs  map[string]struct{ Content string }
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatal(err)
	}
	pg, ok := compose.Services["postgres"]
	if !ok || !strings.HasPrefix(pg.Image, "postgres:") || !strings.Contains(strings.Join(pg.Healthcheck.Test, " "), "pg_isready") {
		t.Fatalf("no health-checked postgres service: %+v", pg)
	}
	replicas := []string{"tabula-1", "tabula-2"}
	var token, db string
	volumes := map[string]bool{}
	for _, name := range replicas {
		s, ok := compose.Services[name]
		if !ok {
			t.Fatalf("no %s service", name)
		}
		if s.Build == nil {
			t.Errorf("%s is not built from the repository", name)
		}
		if !strings.Contains(s.Environment["TABULA_DB"], "@postgres:5432/") {
			t.Errorf("%s: TABULA_DB %q is not the postgres service", name, s.Environment["TABULA_DB"])
		}
		if s.DependsOn["postgres"].Condition != "service_healthy" {
			t.Errorf("%s does not wait for a healthy postgres", name)
		}
		if hc := strings.Join(s.Healthcheck.Test, " "); !strings.Contains(hc, "/tabula probe") || !strings.Contains(hc, "/readyz") {
			t.Errorf("%s health check %q is not tabula probe on /readyz", name, hc)
		}
		if token == "" {
			token, db = s.Environment["TABULA_TOKEN"], s.Environment["TABULA_DB"]
		} else if s.Environment["TABULA_TOKEN"] != token || s.Environment["TABULA_DB"] != db {
			t.Errorf("%s has another token or database than %s", name, replicas[0])
		}
		if len(s.Volumes) != 1 || volumes[s.Volumes[0]] || !strings.HasSuffix(s.Volumes[0], ":/data") {
			t.Errorf("%s: data volume %v is not its own /data", name, s.Volumes)
		}
		volumes[s.Volumes[0]] = true
	}
	if token == "" {
		t.Error("the replicas have no TABULA_TOKEN")
	}
	if compose.Services["tabula-2"].DependsOn["tabula-1"].Condition != "service_healthy" {
		t.Error("tabula-2 does not wait for tabula-1, which makes the shared CA")
	}
	lb, ok := compose.Services["lb"]
	if !ok || len(lb.Ports) != 1 || !strings.HasSuffix(lb.Ports[0], ":6443") {
		t.Fatalf("no lb service publishing 6443: %+v", lb)
	}
	if len(lb.Configs) != 1 {
		t.Fatalf("lb has no configuration: %+v", lb.Configs)
	}
	cfg := compose.Configs[lb.Configs[0].Source].Content
	for _, name := range replicas {
		if lb.DependsOn[name].Condition != "service_healthy" {
			t.Errorf("lb does not wait for a healthy %s", name)
		}
		if !strings.Contains(cfg, "server "+name+" "+name+":6443 check") {
			t.Errorf("lb configuration does not send to %s:\n%s", name, cfg)
		}
	}
	if !strings.Contains(cfg, "mode tcp") || !strings.Contains(cfg, "/readyz") {
		t.Errorf("lb configuration is not TCP passthrough checking /readyz:\n%s", cfg)
	}
}

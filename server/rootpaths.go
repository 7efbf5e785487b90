package server

import (
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// rootPathsRoutes answers / and /index.html as kube-apiserver's index
// does: 200 with the paths it serves, sorted, as indented JSON. kube's
// muxes list the paths registered whole (not the prefixes under them):
// here the static routes, each health check's own path, and the
// discovery path of every group and group-version, local or aggregated.
func (s *Server) rootPathsRoutes(e *echo.Echo) {
	h := func(c echo.Context) error {
		set := map[string]bool{"/api": true, "/api/v1": true, "/apis": true, "/apis/": true}
		for _, r := range e.Routes() {
			// The slash forms go-restful trims are not listed in kube.
			if r.Path != "/" && r.Path != "/index.html" && !strings.ContainsAny(r.Path, ":*") && !strings.HasSuffix(r.Path, "/") {
				set[r.Path] = true
			}
		}
		for path, checks := range map[string][]healthCheck{"/healthz": s.liveChecks(), "/livez": s.liveChecks(), "/readyz": s.readyChecks()} {
			for _, hc := range checks {
				set[path+"/"+hc.name] = true
			}
		}
		for _, g := range s.allGroups() {
			set["/apis/"+g.Name] = true
			for _, v := range g.Versions {
				set["/apis/"+v.GroupVersion] = true
			}
		}
		c.Response().Header().Set(echo.HeaderContentType, "application/json")
		c.Response().WriteHeader(http.StatusOK)
		return writeIndented(c.Response(), metav1.RootPaths{Paths: slices.Sorted(maps.Keys(set))})
	}
	// On kube's plain mux: any method.
	e.Any("/", h)
	e.Any("/index.html", h)
}

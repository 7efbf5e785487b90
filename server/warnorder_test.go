package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tabula-dev/tabula/server"
)

// TestWarningsAsKube: a kind's own warnings come before validating
// admission's (PodSecurity's) and stay when admission refuses the write,
// as kube's BeforeCreate gives them first; and the Warning headers are
// kube's recorder's: past 4096 runes in all, each is cut to 256.
func TestWarningsAsKube(t *testing.T) {
	h := refNewHarness(t)
	hd := map[string]string{"Content-Type": "application/json", "Accept": "application/json"}
	for ns, labels := range map[string]string{"psa-w": `"pod-security.kubernetes.io/warn":"restricted"`, "psa-r": `"pod-security.kubernetes.io/enforce":"restricted"`} {
		h.mustDo("POST", "/api/v1/namespaces", "application/json", `{"metadata":{"name":"`+ns+`","labels":{`+labels+`}}}`, http.StatusCreated)
	}
	pod := `{"metadata":{"name":"p"},"spec":{"nodeSelector":{"beta.kubernetes.io/os":"linux"},"hostPID":true,"containers":[{"name":"c","image":"i"}]}}`
	const deprecated = `spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14`
	for ns, code := range map[string]int{"psa-w": http.StatusCreated, "psa-r": http.StatusForbidden} {
		rec := h.do("POST", "/api/v1/namespaces/"+ns+"/pods", hd, []byte(pod))
		w := rec.Header().Values("Warning")
		if rec.Code != code || len(w) == 0 || !strings.Contains(w[0], deprecated) {
			t.Errorf("%s: %d, warnings %q; want %d with the nodeSelector's deprecation first", ns, rec.Code, w, code)
		}
		if ns == "psa-w" && (len(w) < 2 || !strings.Contains(w[1], "would violate PodSecurity")) {
			t.Errorf("%s: warnings %q; want PodSecurity's after the kind's", ns, w)
		}
	}

	// Many long warnings: each cut to 256 runes once the total passes 4096.
	var containers []string
	for i := range 40 {
		containers = append(containers, fmt.Sprintf(`{"name":"c%02d-%s","image":"i","securityContext":{"privileged":true}}`, i, strings.Repeat("x", 40)))
	}
	var annotations []string
	for i := range 30 {
		annotations = append(annotations, fmt.Sprintf(`"container.apparmor.security.beta.kubernetes.io/c%02d-%s":"runtime/default"`, i, strings.Repeat("x", 40)))
	}
	body := `{"metadata":{"name":"many","annotations":{` + strings.Join(annotations, ",") + `}},"spec":{"containers":[` + strings.Join(containers, ",") + `]}}`
	rec := h.do("POST", "/api/v1/namespaces/psa-w/pods", hd, []byte(body))
	w := rec.Header().Values("Warning")
	total := 0
	for _, v := range w {
		text := strings.TrimSuffix(strings.TrimPrefix(v, `299 - "`), `"`)
		n := utf8.RuneCountInString(strings.ReplaceAll(text, `\"`, `"`))
		if n > 256 {
			t.Errorf("a warning of %d runes once truncating: %.80s…", n, text)
		}
		total += n
	}
	if rec.Code != http.StatusCreated || len(w) < 2 || total > 4096+256 {
		t.Errorf("many warnings: %d, %d headers of %d runes in all; want them cut as kube's recorder cuts them", rec.Code, len(w), total)
	}
}

// TestAdmissionBeforeConflict: an update is admitted before its
// resourceVersion is judged, as kube's store runs mutating admission
// first: a node's stale update that NodeRestriction refuses gets the
// refusal, not a conflict.
func TestAdmissionBeforeConflict(t *testing.T) {
	h, _, as := authServer(t, "tok-root,root,1,\"system:masters\"\ntok-n1,system:node:n1,2,\"system:nodes\"\n", server.Config{})
	if r := h.do("POST", "/api/v1/nodes", as("tok-root"), []byte(`{"metadata":{"name":"n1"}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create node: %d %s", r.Code, r.Body)
	}
	rec := h.do("PUT", "/api/v1/nodes/n1", as("tok-n1"), []byte(`{"metadata":{"name":"n1","resourceVersion":"1","labels":{"node-role.kubernetes.io/master":""}}}`))
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), `node \"n1\" is not allowed to modify`) {
		t.Errorf("a node's stale update of a restricted label: %d %s; want NodeRestriction's 403", rec.Code, rec.Body)
	}
}

package server_test

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/tabula-dev/tabula/server"
)

const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*"]
- level: Metadata
  resources: [{group: "", resources: [secrets]}]
- level: RequestResponse
  resources: [{group: "", resources: [configmaps]}]
- level: Request
  resources: [{group: "", resources: [services]}]
- level: Metadata
`

// TestAudit: with a policy and a log, requests are recorded as
// kube-apiserver records them: the level the policy gives (bodies for
// configmaps, none for secrets), the user and the impersonated user, the
// authorization decision, the object, the response status — refusals
// and failed authentication included — and the Audit-Id every response
// carries.
func TestAudit(t *testing.T) {
	dir := t.TempDir()
	policy, log := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	h, srv, as := authServer(t, "tok-root,root,1,\"system:masters\"\ntok-bob,bob,3\n", server.Config{Audit: server.AuditConfig{PolicyFile: policy, LogPath: log}})
	t.Cleanup(srv.StopAuditing)
	rec := h.do("POST", "/api/v1/namespaces/default/configmaps", as("tok-root"), []byte(`{"metadata":{"name":"c"},"data":{"k":"v"}}`))
	if rec.Code != http.StatusCreated || rec.Header().Get("Audit-Id") == "" {
		t.Fatalf("create configmap: %d Audit-Id %q %s", rec.Code, rec.Header().Get("Audit-Id"), rec.Body)
	}
	createID := rec.Header().Get("Audit-Id")
	h.do("POST", "/api/v1/namespaces/default/secrets", as("tok-root"), []byte(`{"metadata":{"name":"s"},"stringData":{"password":"hunter2"}}`))
	h.do("GET", "/api/v1/namespaces/default/configmaps/c", as("tok-root", "Impersonate-User", "bob"), nil)
	h.do("GET", "/api/v1/namespaces/default/secrets/s", as("tok-bad"), nil)
	h.do("GET", "/healthz", nil, nil)
	listID := h.do("GET", "/api/v1/namespaces/default/configmaps", as("tok-root"), nil).Header().Get("Audit-Id")
	// A Protobuf list twice (the second from cached encodings) and a
	// Table: each records a response object (the Protobuf lists their
	// objects, as JSON).
	var viewIDs []string
	for _, accept := range []string{"application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf", "application/json;as=Table;v=v1;g=meta.k8s.io"} {
		rec := h.do("GET", "/api/v1/namespaces/default/configmaps", as("tok-root", "Accept", accept), nil)
		if rec.Code != http.StatusOK {
			t.Fatalf("list as %s: %d %s", accept, rec.Code, rec.Body)
		}
		viewIDs = append(viewIDs, rec.Header().Get("Audit-Id"))
	}
	// Protobuf gets at RequestResponse carry the object answered, the
	// second too, though its encoding is kept from the first.
	var getIDs []string
	for range 2 {
		rec := h.do("GET", "/api/v1/namespaces/default/configmaps/c", as("tok-root", "Accept", "application/vnd.kubernetes.protobuf"), nil)
		if rec.Code != http.StatusOK {
			t.Fatalf("Protobuf get: %d %s", rec.Code, rec.Body)
		}
		getIDs = append(getIDs, rec.Header().Get("Audit-Id"))
	}
	// An audited list is written from its decoded objects, not streamed:
	// a v1beta1 metadata list in Protobuf has that version's field
	// numbers there too (items 1, metadata 2).
	rec = h.do("GET", "/api/v1/namespaces/default/configmaps", as("tok-root", "Accept", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;v=v1beta1;g=meta.k8s.io"), nil)
	scheme := runtime.NewScheme()
	metav1beta1.AddMetaToScheme(scheme)
	obj, _, err := serializer.NewCodecFactory(scheme).UniversalDeserializer().Decode(rec.Body.Bytes(), nil, nil)
	if l, ok := obj.(*metav1beta1.PartialObjectMetadataList); err != nil || !ok || l.ResourceVersion == "" ||
		!slices.ContainsFunc(l.Items, func(m metav1.PartialObjectMetadata) bool { return m.Name == "c" && m.UID != "" }) {
		t.Errorf("audited v1beta1 metadata list: %d %v %+v", rec.Code, err, obj)
	}

	metaID := h.do("GET", "/api/v1/namespaces/default/configmaps/c", as("tok-root", "Accept", "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"), nil).Header().Get("Audit-Id")
	h.do("POST", "/api/v1/namespaces/default/configmaps", as("tok-root"), []byte(`{"metadata":{"name":"gone"}}`))
	rec = h.do("DELETE", "/api/v1/namespaces/default/configmaps/gone", as("tok-root"), []byte(`{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"}`))
	if rec.Code != http.StatusOK {
		t.Fatalf("delete: %d %s", rec.Code, rec.Body)
	}
	deleteID := rec.Header().Get("Audit-Id")
	endpointsID := h.do("GET", "/api/v1/namespaces/default/endpoints", as("tok-root"), nil).Header().Get("Audit-Id")
	serviceID := h.do("POST", "/api/v1/namespaces/default/services", as("tok-root"), []byte(`{"metadata":{"name":"svc"},"spec":{"ports":[{"port":80}]}}`)).Header().Get("Audit-Id")

	events := readAudit(t, log)
	find := func(what string, match func(e auditv1.Event) bool) auditv1.Event {
		t.Helper()
		for _, e := range events {
			if match(e) {
				return e
			}
		}
		t.Fatalf("no audit event for %s in %d events", what, len(events))
		return auditv1.Event{}
	}
	create := find("the configmap create", func(e auditv1.Event) bool { return string(e.AuditID) == createID })
	if create.Level != auditv1.LevelRequestResponse || create.Stage != auditv1.StageResponseComplete || create.Verb != "create" ||
		create.User.Username != "root" || create.ObjectRef == nil || create.ObjectRef.Resource != "configmaps" || create.ObjectRef.Name != "c" ||
		create.ObjectRef.Namespace != "default" || create.ResponseStatus == nil || create.ResponseStatus.Code != 201 ||
		create.RequestObject == nil || !strings.Contains(string(create.RequestObject.Raw), `"k":"v"`) ||
		create.ResponseObject == nil || !strings.Contains(string(create.ResponseObject.Raw), `"resourceVersion"`) ||
		create.Annotations["authorization.k8s.io/decision"] != "allow" {
		t.Errorf("configmap create event: %+v", create)
	}
	// A list at RequestResponse carries the list answered.
	list := find("the configmap list", func(e auditv1.Event) bool {
		return string(e.AuditID) == listID && e.Stage == auditv1.StageResponseComplete
	})
	if list.Verb != "list" || list.ResponseObject == nil || !strings.Contains(string(list.ResponseObject.Raw), `"kind":"ConfigMapList"`) ||
		!strings.Contains(string(list.ResponseObject.Raw), `"name":"c"`) || !strings.Contains(string(list.ResponseObject.Raw), `"k":"v"`) {
		t.Errorf("configmap list event: %+v", list)
	}
	for i, id := range viewIDs {
		e := find("a list in another form", func(e auditv1.Event) bool {
			return string(e.AuditID) == id && e.Stage == auditv1.StageResponseComplete
		})
		if e.ResponseObject == nil || i < 2 && !strings.Contains(string(e.ResponseObject.Raw), `"k":"v"`) {
			t.Errorf("list %d in another form: no response object with the data: %+v", i, e)
		}
		// The Table is recorded as sent (its rows), not the objects: a
		// kubectl get does not copy data into the log.
		if i == 2 && (!strings.Contains(string(e.ResponseObject.Raw), `"kind":"Table"`) || strings.Contains(string(e.ResponseObject.Raw), `"k":"v"`)) {
			t.Errorf("Table list: response object %s; want the Table without the data", e.ResponseObject.Raw)
		}
	}
	meta := find("a metadata get", func(e auditv1.Event) bool {
		return string(e.AuditID) == metaID && e.Stage == auditv1.StageResponseComplete
	})
	if meta.ResponseObject == nil || !strings.Contains(string(meta.ResponseObject.Raw), `"kind":"PartialObjectMetadata"`) || strings.Contains(string(meta.ResponseObject.Raw), `"k":"v"`) {
		t.Errorf("metadata get: response object %+v; want PartialObjectMetadata", meta.ResponseObject)
	}
	// A body is recorded with its defaults, as kube decodes it.
	if e := find("the service create", func(e auditv1.Event) bool {
		return string(e.AuditID) == serviceID && e.Stage == auditv1.StageResponseComplete
	}); e.RequestObject == nil || !strings.Contains(string(e.RequestObject.Raw), `"targetPort":80`) || !strings.Contains(string(e.RequestObject.Raw), `"type":"ClusterIP"`) {
		t.Errorf("service create: request object %+v; want it defaulted (targetPort 80, type ClusterIP)", e.RequestObject)
	}
	// A deprecated API's requests are marked, as kube marks them.
	if e := find("the endpoints list", func(e auditv1.Event) bool {
		return string(e.AuditID) == endpointsID && e.Stage == auditv1.StageResponseComplete
	}); e.Annotations["k8s.io/deprecated"] != "true" {
		t.Errorf("list of v1 Endpoints (deprecated in 1.33): annotations %v; want k8s.io/deprecated", e.Annotations)
	}
	// A delete records the DeleteOptions sent and the Status answered,
	// which names the deleted object's uid.
	del := find("the delete", func(e auditv1.Event) bool {
		return string(e.AuditID) == deleteID && e.Stage == auditv1.StageResponseComplete
	})
	if del.Verb != "delete" || del.RequestObject == nil || !strings.Contains(string(del.RequestObject.Raw), `"propagationPolicy":"Background"`) ||
		del.ResponseStatus == nil || del.ResponseStatus.Status != metav1.StatusSuccess || del.ResponseStatus.Details == nil ||
		del.ResponseStatus.Details.UID == "" || del.ResponseStatus.Details.Name != "gone" ||
		del.ResponseObject == nil || !strings.Contains(string(del.ResponseObject.Raw), `"kind":"Status"`) {
		t.Errorf("delete event: %+v", del)
	}
	for i, id := range getIDs {
		e := find("a Protobuf get", func(e auditv1.Event) bool {
			return string(e.AuditID) == id && e.Stage == auditv1.StageResponseComplete
		})
		if e.Verb != "get" || e.ResponseObject == nil || !strings.Contains(string(e.ResponseObject.Raw), `"k":"v"`) {
			t.Errorf("Protobuf get %d: no response object with the data: %+v", i, e)
		}
	}
	secret := find("the secret create", func(e auditv1.Event) bool {
		return e.ObjectRef != nil && e.ObjectRef.Resource == "secrets" && e.Verb == "create"
	})
	if secret.Level != auditv1.LevelMetadata || secret.RequestObject != nil || secret.ResponseObject != nil || secret.ResponseStatus.Code != 201 {
		t.Errorf("secret create event (Metadata, no bodies): %+v", secret)
	}
	for _, e := range events {
		if e.RequestObject != nil && strings.Contains(string(e.RequestObject.Raw), "hunter2") {
			t.Errorf("a Secret's data reached the audit log: %+v", e)
		}
	}
	imp := find("the impersonated read", func(e auditv1.Event) bool { return e.ImpersonatedUser != nil })
	if imp.User.Username != "root" || imp.ImpersonatedUser.Username != "bob" || imp.ResponseStatus.Code != 403 ||
		!strings.Contains(imp.ResponseStatus.Message, `User "bob" cannot get resource "configmaps"`) || imp.Annotations["authorization.k8s.io/decision"] != "forbid" {
		t.Errorf("impersonated read event: %+v", imp)
	}
	failed := find("the failed authentication", func(e auditv1.Event) bool { return e.ResponseStatus != nil && e.ResponseStatus.Code == 401 })
	if failed.Stage != auditv1.StageResponseStarted || failed.ObjectRef == nil || failed.ObjectRef.Resource != "secrets" ||
		failed.ResponseStatus.Reason != metav1.StatusReasonUnauthorized || failed.ResponseStatus.Message != "Unauthorized" || failed.ResponseStatus.Status != metav1.StatusFailure {
		t.Errorf("failed authentication event: %+v", failed)
	}
	for _, e := range events {
		if e.RequestURI == "/healthz" {
			t.Errorf("/healthz was audited though the policy says None: %+v", e)
		}
		if e.Stage == auditv1.StageRequestReceived {
			t.Errorf("an omitted stage was recorded: %+v", e)
		}
	}
}

// readAudit parses an audit log of JSON events.
func readAudit(t *testing.T, path string) []auditv1.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []auditv1.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		if e.Kind != "Event" || e.APIVersion != "audit.k8s.io/v1" {
			t.Errorf("audit line of kind %s/%s", e.APIVersion, e.Kind)
		}
		out = append(out, e)
	}
	return out
}

// TestAuditLogFailureKeepsServing: a write to the audit log that fails
// (here, a device that is always full) does not fail the request, as in
// kube-apiserver's default --audit-log-mode=blocking.
func TestAuditLogFailureKeepsServing(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	h, srv, as := authServer(t, "tok-root,root,1,\"system:masters\"\n", server.Config{Audit: server.AuditConfig{PolicyFile: policy, LogPath: "/dev/full"}})
	t.Cleanup(srv.StopAuditing)
	for i := range 3 {
		if rec := h.do("GET", "/api/v1/namespaces/default/configmaps", as("tok-root"), nil); rec.Code != http.StatusOK {
			t.Fatalf("list %d with the audit log full: %d %s; want 200", i, rec.Code, rec.Body)
		}
	}
}

// TestAuditIssuedCredentialID: a TokenRequest's audit event names the
// issued token's credential id (its jti), as kube's token storage
// annotates it, so its later uses (credential-id in the user's extra)
// lead back to where it was issued.
func TestAuditIssuedCredentialID(t *testing.T) {
	dir := t.TempDir()
	policy, log := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	h, srv, as := authServer(t, "tok-root,root,1,\"system:masters\"\n", server.Config{Audit: server.AuditConfig{PolicyFile: policy, LogPath: log},
		ServiceAccountTokens: newSATokens(t, key)})
	if rec := h.do("POST", "/api/v1/namespaces/default/serviceaccounts", as("tok-root"), []byte(`{"metadata":{"name":"bot"}}`)); rec.Code != http.StatusCreated {
		t.Fatalf("service account: %d %s", rec.Code, rec.Body)
	}
	rec := h.do("POST", "/api/v1/namespaces/default/serviceaccounts/bot/token", as("tok-root"), []byte(`{"spec":{}}`))
	var tr struct{ Status struct{ Token string } }
	if err := json.Unmarshal(rec.Body.Bytes(), &tr); err != nil || rec.Code != http.StatusCreated {
		t.Fatalf("token: %d %s", rec.Code, rec.Body)
	}
	parts := strings.Split(tr.Status.Token, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	var claims struct{ JTI string }
	if err != nil || json.Unmarshal(payload, &claims) != nil || claims.JTI == "" {
		t.Fatalf("token claims %s: %v", payload, err)
	}
	id := rec.Header().Get("Audit-Id")
	srv.StopAuditing()
	for _, e := range readAudit(t, log) {
		if string(e.AuditID) == id && e.Stage == auditv1.StageResponseComplete {
			if got := e.Annotations["authentication.kubernetes.io/issued-credential-id"]; got != "JTI="+claims.JTI {
				t.Errorf("issued-credential-id %q; want JTI=%s", got, claims.JTI)
			}
			return
		}
	}
	t.Fatal("no audit event for the TokenRequest")
}

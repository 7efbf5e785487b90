package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// typicalCSR is a PEM certificate request (an EC key, CN typical), base64.
const typicalCSR = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlIZk1JR0dBZ0VBTUNReEVEQU9CZ05WQkFNTUIzUjVjR2xqWVd3eEVEQU9CZ05WQkFvTUIyVjRZVzF3YkdVdwpXVEFUQmdjcWhrak9QUUlCQmdncWhrak9QUU1CQndOQ0FBUWdDY0RiWjdnYVJTUU52Vmp4NWtQSVo2L0U3TzBFCkZDdUo2UXVIUkV0VW9ZRy9sSk1nbmk5U3dxZE5mWFp6b0FTUFFCRVlJSkVEd3R2R2lJcDdTVzRKb0FBd0NnWUkKS29aSXpqMEVBd0lEU0FBd1JRSWhBTmJjaHN2dkVQMUR5N0RXcmgyNWRZMkw3YVVrWjFTUUpmdld4UTl1S0txMgpBaUJrWGdBS29ETEJHcWM3eDRlUkxQaDYyTVhwYmZQU1NKVGFvQWJ3U21LYytnPT0KLS0tLS1FTkQgQ0VSVElGSUNBVEUgUkVRVUVTVC0tLS0tCg=="

// TestCertificateSigningRequestApproval: a request is created without a
// decision, approved through its approval subresource (not through the
// main resource, whose spec and status stay), and keeps its decision
// when a signer writes status.
func TestCertificateSigningRequestApproval(t *testing.T) {
	h := refNewHarness(t)
	ct := map[string]string{"Content-Type": "application/json"}
	const csrs = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
	body := `{"metadata":{"name":"c1"},"spec":{"signerName":"example.com/s","usages":["client auth"],"request":"` + typicalCSR + `"},
		"status":{"conditions":[{"type":"Approved","status":"True","reason":"Self"}]}}`
	body = strings.Replace(body, `"signerName"`, `"username":"forged","signerName"`, 1)
	if r := h.do("POST", csrs, ct, []byte(body)); r.Code != http.StatusCreated || strings.Contains(r.Body.String(), "Approved") ||
		strings.Contains(r.Body.String(), "forged") || !strings.Contains(r.Body.String(), `"username":"`) {
		t.Fatalf("create: %d %s; want 201 with the requester recorded and without the client's own approval", r.Code, r.Body)
	}
	merge := map[string]string{"Content-Type": "application/merge-patch+json"}
	if r := h.do("PATCH", csrs+"/c1", merge, []byte(`{"spec":{"signerName":"example.com/other"},"status":{"conditions":[{"type":"Approved","status":"True"}]}}`)); r.Code != http.StatusOK ||
		strings.Contains(r.Body.String(), "example.com/other") || strings.Contains(r.Body.String(), "Approved") {
		t.Fatalf("main resource update: %d %s; want spec and status kept", r.Code, r.Body)
	}
	approve := `{"status":{"conditions":[{"type":"Approved","status":"True","reason":"KubectlApprove","message":"ok"}]}}`
	r := h.do("PATCH", csrs+"/c1/approval", merge, []byte(approve))
	if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `"type":"Approved"`) || !strings.Contains(r.Body.String(), "lastUpdateTime") {
		t.Fatalf("approve: %d %s", r.Code, r.Body)
	}
	deny := `{"status":{"conditions":[{"type":"Approved","status":"True","reason":"A"},{"type":"Denied","status":"True","reason":"B"}]}}`
	if r := h.do("PATCH", csrs+"/c1/approval", merge, []byte(deny)); r.Code != http.StatusUnprocessableEntity {
		t.Errorf("approve and deny at once: %d %s; want 422", r.Code, r.Body)
	}
	signed := `{"status":{"certificate":"bm90IGEgY2VydA==","conditions":[]}}`
	if r := h.do("PATCH", csrs+"/c1/status", merge, []byte(signed)); r.Code != http.StatusUnprocessableEntity {
		t.Errorf("status write dropping the decision: %d %s; want 422", r.Code, r.Body)
	}
	keep := `{"status":{"conditions":[{"type":"Approved","status":"True","reason":"Forged","message":"changed"}]}}`
	if r := h.do("PATCH", csrs+"/c1/status", merge, []byte(keep)); r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `"reason":"KubectlApprove"`) {
		t.Errorf("status write changing the decision's text: %d %s; want the approval kept as it was", r.Code, r.Body)
	}
}

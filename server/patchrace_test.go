package server_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
)

// TestConcurrentPatchesAllLand: merge patches and applies without a
// resourceVersion, racing on one object, are retried on what is current
// for as long as their requests last, as kube's GuaranteedUpdate retries
// them: none answers 409, and every one's change is kept.
func TestConcurrentPatchesAllLand(t *testing.T) {
	h := refNewHarness(t)
	h.mustDo("POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"metadata":{"name":"hot"}}`, http.StatusCreated)
	const writers, each = 12, 25
	var wg sync.WaitGroup
	failed := make(chan string, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				path, ct := "/api/v1/namespaces/default/configmaps/hot", "application/merge-patch+json"
				body := fmt.Sprintf(`{"data":{"k%d-%d":"v"}}`, w, i)
				if w%3 == 0 {
					// An apply of its own field manager, which keeps its
					// earlier keys.
					path += fmt.Sprintf("?fieldManager=m%d", w)
					ct = "application/apply-patch+yaml"
					keys := ""
					for j := 0; j <= i; j++ {
						keys += fmt.Sprintf(`,"k%d-%d":"v"`, w, j)
					}
					body = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"hot"},"data":{` + keys[1:] + `}}`
				}
				rec := h.do("PATCH", path, map[string]string{"Content-Type": ct, "Accept": "application/json"}, []byte(body))
				if rec.Code != http.StatusOK {
					failed <- fmt.Sprintf("writer %d patch %d: %d %s", w, i, rec.Code, rec.Body)
				}
			}
		}()
	}
	wg.Wait()
	close(failed)
	for f := range failed {
		t.Error(f)
	}
	cm := h.mustDo("GET", "/api/v1/namespaces/default/configmaps/hot", "", "", http.StatusOK)
	data, _ := cm["data"].(map[string]interface{})
	if len(data) != writers*each {
		t.Errorf("%d keys kept; want %d, one for every patch", len(data), writers*each)
	}
}

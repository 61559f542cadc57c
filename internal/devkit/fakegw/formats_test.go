package fakegw

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/contract"
)

// TestEveryProviderHasAWire: the fake speaks exactly the providers Keel knows, and each wire
// answers its own routes (a body it cannot read is its 400, not the server's 404).
func TestEveryProviderHasAWire(t *testing.T) {
	var names []string
	for _, wf := range formats {
		names = append(names, wf.name())
	}
	if !slices.Equal(names, contract.Providers) {
		t.Fatalf("formats %v, providers %v: every provider row needs a wire here, in the same order", names, contract.Providers)
	}
	h := New(Options{}).Handler()
	for _, wf := range formats {
		for _, route := range wf.routes() {
			method, path, _ := strings.Cut(route, " ")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader("{")))
			if rec.Code != http.StatusBadRequest {
				t.Errorf("%s %s: status %d, want 400 from the %s wire", method, path, rec.Code, wf.name())
			}
		}
	}
}

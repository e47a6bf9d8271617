package api

import (
	"net/http"
	"testing"

	"github.com/quantserve/quantserve/internal/onnxbuild"
	"github.com/quantserve/quantserve/tensor"
)

// TestBearerSchemeIsCaseInsensitive: model control takes the admin token
// under the Bearer scheme written in any case, and after more than one
// space (RFC 7235); the token itself is compared exactly, and other
// schemes are refused.
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	dir := writeRepo(t, map[string]map[int][]byte{"m": {1: onnxbuild.Identity(tensor.Float32, []int{-1})}}, nil)
	url := adminServer(t, openRepo(t, dir), adminToken)
	load := func(auth string) response {
		t.Helper()
		return doWith(t, "POST", url+"/v2/repository/models/m/load", "", map[string]string{"Authorization": auth})
	}
	for _, auth := range []string{"Bearer " + adminToken, "bearer " + adminToken, "BEARER " + adminToken, "bEaReR " + adminToken, "Bearer   " + adminToken} {
		if r := load(auth); r.status != http.StatusOK {
			t.Errorf("Authorization %q: %d %s", auth, r.status, r.body)
		}
	}
	for _, auth := range []string{"bearer S3CRET", "bearer " + adminToken + "x", "Basic " + adminToken, "Bearer" + adminToken, "bearer", adminToken, "Token " + adminToken} {
		r := load(auth)
		wantError(t, r, http.StatusUnauthorized, "Bearer")
		if r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("Authorization %q: 401 without WWW-Authenticate", auth)
		}
	}
}

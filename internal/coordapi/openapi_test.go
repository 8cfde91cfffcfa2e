package coordapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOpenAPIMatchesRoutes: every route the mux serves is in openapi.json
// with its method, and the document names no other.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(openAPI, &doc))
	require.True(t, strings.HasPrefix(doc.OpenAPI, "3."), doc.OpenAPI)
	var documented, served []string
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	for _, rt := range routes {
		served = append(served, rt.method+" "+rt.path)
	}
	slices.Sort(documented)
	slices.Sort(served)
	require.Equal(t, served, documented)

	// And the mux serves each of them (not the catch-all's not_found).
	a := startAgent(t, nil)
	for _, rt := range routes {
		if rt.body || strings.HasSuffix(rt.path, "/observe") {
			continue // holds and streams are exercised by their own tests
		}
		resp, err := a.srv.Client().Get(a.srv.URL + rt.path + "?name=x")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, rt.path)
	}
	// The documented error codes are the package's.
	var codes struct {
		Components struct {
			Schemas struct {
				Code struct {
					Enum []string `json:"enum"`
				} `json:"Code"`
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(openAPI, &codes))
	require.ElementsMatch(t, []string{CodeBadRequest, CodeUnsupported, CodeUnauthorized, CodeForbidden, CodeNotFound, CodeBusy,
		CodeTimeout, CodeNameInUse, CodeLimitMismatch, CodeSessionLost, CodeUnavailable, CodeShuttingDown}, codes.Components.Schemas.Code.Enum)
}

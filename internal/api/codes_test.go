package api_test

import (
	"net/http"
	"testing"

	"github.com/kura-backup/kura/internal/api"
)

// TestErrorCodeTable: each stable code has its HTTP status and the CLI's
// exit code; a name that names nothing is a usage error like bad input.
func TestErrorCodeTable(t *testing.T) {
	for _, tc := range []struct {
		code         string
		status, exit int
	}{
		{api.CodeBadRequest, http.StatusBadRequest, 2},
		{api.CodeNotFound, http.StatusNotFound, 2},
		{api.CodeUnauthorized, http.StatusUnauthorized, 1},
		{api.CodeForbidden, http.StatusForbidden, 1},
		{api.CodeConflict, http.StatusConflict, 1},
		{api.CodeTokenUsed, http.StatusUnauthorized, 1},
		{api.CodeTokenExpired, http.StatusUnauthorized, 1},
		{api.CodeInternal, http.StatusInternalServerError, 1},
		{api.CodeStreamFailed, http.StatusBadGateway, 1},
		{api.CodeVerifyFailed, http.StatusUnprocessableEntity, 4},
		{"from_a_newer_server", http.StatusInternalServerError, 1},
	} {
		if got := api.HTTPStatus(tc.code); got != tc.status {
			t.Errorf("%s: HTTP status %d; want %d", tc.code, got, tc.status)
		}
		if got := api.ExitCode(tc.code); got != tc.exit {
			t.Errorf("%s: exit code %d; want %d", tc.code, got, tc.exit)
		}
	}
	if len(api.Codes) != 10 {
		t.Errorf("%d codes in the table; this test knows 10 (add the new one here and to docs/api.md)", len(api.Codes))
	}
}

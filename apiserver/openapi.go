package apiserver

import (
	"net/http"
)

// serveOpenAPI serves /openapi/v2 and /openapi/v3. Until the documents built
// from the served resources are wired in, it serves valid, empty documents:
// kubectl then validates nothing client-side, and falls back to its built-in
// types for strategic merge patches.
func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/openapi/v2":
		writeJSON(w, http.StatusOK, []byte(`{"swagger":"2.0","info":{"title":"kloop","version":"`+serverVersion.GitVersion+`"},"paths":{},"definitions":{}}`))
	case "/openapi/v3":
		writeJSON(w, http.StatusOK, []byte(`{"paths":{}}`))
	default:
		writeStatus(w, notFoundPath(r.URL.Path))
	}
}

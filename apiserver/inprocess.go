package apiserver

import (
	"crypto/rand"
	"strings"

	"k8s.io/client-go/rest"

	"kloop.dev/kloop/apiserver/internal/inproc"
)

// inProcessConfig returns a client configuration that reaches the server
// in process, authenticated as u (a token of its own, made here), with the
// user agent ua (field managers are named after its first segment).
func (s *Server) inProcessConfig(u UserInfo, ua string) (*rest.Config, error) {
	token := strings.ToLower(rand.Text() + rand.Text())
	if err := s.users.add(map[string]UserInfo{token: u}); err != nil {
		return nil, err
	}
	return &rest.Config{
		Host:        "http://kloop.in-process",
		BearerToken: token,
		UserAgent:   ua,
		Transport:   inproc.Transport{Handler: s.handler},
		QPS:         -1,
	}, nil
}

package apiserver

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// UserInfo is an identity, as kube-apiserver's user.Info: the user name,
// a UID, the groups and extra attributes. RBAC authorizes requests by the
// name and the groups; every authenticated user is also in
// system:authenticated, which the server adds.
type UserInfo struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// Groups and users kube-apiserver gives a meaning to.
const (
	// MastersGroup may do anything, unchecked (kube's system:masters).
	MastersGroup = "system:masters"
	// AuthenticatedGroup holds every authenticated user.
	AuthenticatedGroup = "system:authenticated"
	// UnauthenticatedGroup holds system:anonymous.
	UnauthenticatedGroup = "system:unauthenticated"
	// AnonymousUser is the user of requests without credentials, on
	// servers that take them (kube-apiserver's --anonymous-auth).
	AnonymousUser = "system:anonymous"
)

// adminUser is the identity of Options.Token: an administrator, in
// system:masters (apiservertest's kube-apiserver gives its token the same
// identity).
const adminUser = "kloop-admin"

// identity is an authenticated user as the server keeps it: immutable once
// made.
type identity struct {
	UserInfo // Groups include system:authenticated
	// masters: in system:masters, which authorization does not check.
	masters bool
}

func newIdentity(u UserInfo) *identity {
	id := &identity{UserInfo: u}
	id.Groups = slices.Clone(u.Groups)
	if u.Name != AnonymousUser && !slices.Contains(id.Groups, AuthenticatedGroup) && !slices.Contains(id.Groups, UnauthenticatedGroup) {
		id.Groups = append(id.Groups, AuthenticatedGroup)
	}
	id.masters = slices.Contains(id.Groups, MastersGroup)
	return id
}

// users holds the server's bearer tokens: a map replaced, never changed, on
// AddUser, so that authentication reads it without a lock.
type users struct {
	mu     sync.Mutex                           // serializes the writers of tokens
	tokens atomic.Pointer[map[string]*identity] // bearer token -> identity
}

func (u *users) lookup(token string) *identity { return (*u.tokens.Load())[token] }

// add registers tokens (all or none).
func (u *users) add(byToken map[string]UserInfo) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	old := u.tokens.Load()
	next := make(map[string]*identity, len(*old)+len(byToken))
	for t, id := range *old {
		next[t] = id
	}
	for t, info := range byToken {
		if err := checkUser(t, info); err != nil {
			return err
		}
		if _, dup := next[t]; dup {
			return fmt.Errorf("apiserver: the token of user %q is already in use", info.Name)
		}
		next[t] = newIdentity(info)
	}
	u.tokens.Store(&next)
	return nil
}

func checkUser(token string, u UserInfo) error {
	switch {
	case token == "":
		return fmt.Errorf("apiserver: user %q has an empty token", u.Name)
	case strings.ContainsAny(token, " \t\r\n"):
		return fmt.Errorf("apiserver: the token of user %q contains white space (a bearer token never can)", u.Name)
	case u.Name == "":
		return errors.New("apiserver: a user without a name")
	}
	return nil
}

// AddUser makes token authenticate u from now on, besides the users the
// server was made with (Options.Token, Options.Users). It fails if token is
// empty, has white space or is already in use, or u has no name.
func (s *Server) AddUser(token string, u UserInfo) error {
	return s.users.add(map[string]UserInfo{token: u})
}

// bearerToken reads the token of an Authorization header as
// kube-apiserver's bearer token authenticator does: "Bearer <token>" with
// the scheme in any case; ok is false when the header carries none.
func bearerToken(h string) (token string, ok bool) {
	h = strings.TrimSpace(h)
	scheme, rest, found := strings.Cut(h, " ")
	if !found || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token, _, _ = strings.Cut(rest, " ")
	return token, token != ""
}

// authenticate returns the user a request authenticates as: the owner of
// its bearer token; nil when it has no valid token.
func (s *Server) authenticate(r *http.Request) *identity {
	token, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		return nil
	}
	return s.authenticateToken(token)
}

// authenticateToken returns the user of a bearer token: a user's
// (Options.Users, AddUser) or a ServiceAccount's (satoken.go); nil when
// it is neither.
func (s *Server) authenticateToken(token string) *identity {
	if u := s.users.lookup(token); u != nil {
		return u
	}
	if strings.Count(token, ".") == 2 {
		return s.serviceAccountUser(token)
	}
	return nil
}

// ReadTokenFile reads a token file in the format of kube-apiserver's
// --token-auth-file: CSV records of token, user name, UID and optionally
// the groups, comma-separated in one (quoted) field:
//
//	31ada4fd-adec-460c-809a-9e56ceb75269,alice,alice-uid,"devs,qa"
//
// As kube-apiserver, it skips records with an empty token and keeps the
// last of duplicate tokens; records of fewer than three fields are an
// error. The result goes in Options.Users.
func ReadTokenFile(path string) (map[string]UserInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("apiserver: token file: %w", err)
	}
	defer f.Close()
	users, err := ParseTokenFile(f)
	if err != nil {
		return nil, fmt.Errorf("apiserver: token file %s: %w", path, err)
	}
	return users, nil
}

// ParseTokenFile is ReadTokenFile on the file's content.
func ParseTokenFile(r io.Reader) (map[string]UserInfo, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	out := map[string]UserInfo{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(rec) < 3 {
			return nil, fmt.Errorf("a record must have at least 3 columns (token, user name, user uid), found %d", len(rec))
		}
		if rec[0] == "" {
			continue
		}
		u := UserInfo{Name: rec[1], UID: rec[2]}
		if len(rec) >= 4 {
			u.Groups = strings.Split(rec[3], ",")
		}
		out[rec[0]] = u
	}
}

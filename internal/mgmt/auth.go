package mgmt

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/junction-router/junction/recipes"
)

// Permissions routes require. PermPublic marks GET /health, the one route that
// never asks for a token.
const (
	PermPublic          = ""
	PermReadyRead       = "ready.read"
	PermConfigRead      = "config.read"
	PermConfigWrite     = "config.write"
	PermSecretView      = "secret_view"
	PermDataRead        = "data.read"
	PermDataWrite       = "data.write"
	PermClassifyInvoke  = "classify.invoke"
	PermAuditRead       = "audit.read"
	PermLearningIngest  = "learning.ingest"
	PermCacheRead       = "cache.read"
	PermCacheManage     = "cache.manage"
	PermCacheInvalidate = "cache.invalidate"
)

// Principal is who made a management request.
type Principal struct {
	Name  string
	Roles []string
	perms map[string]bool
	all   bool
}

// Has reports whether the principal holds perm.
func (p *Principal) Has(perm string) bool {
	return perm == PermPublic || p.all || p.perms[perm]
}

// anonymous is the principal when authentication is off: every permission,
// because the operator chose an unauthenticated (loopback) API.
var anonymous = &Principal{Name: "anonymous", all: true}

// authenticator checks bearer tokens. Tokens are read once per activation
// from their sources and kept only as SHA-256 digests; a presented token is
// hashed and compared with every digest in constant time.
type authenticator struct {
	bearer bool
	tokens []tokenDigest
}

type tokenDigest struct {
	sum       [32]byte
	principal *Principal
}

// newAuthenticator reads the token sources of doc. A missing variable or
// unreadable file is an error naming the token's path, so an activation that
// would lock everyone out is rejected instead.
func newAuthenticator(doc *recipes.Document) (*authenticator, error) {
	a := doc.Global.Services.ManagementAPI.Auth
	if a.Mode != "bearer" {
		return &authenticator{}, nil
	}
	roles := map[string][]string{}
	for _, r := range a.Roles {
		roles[r.Name] = r.Permissions
	}
	out := &authenticator{bearer: true}
	var problems []recipes.Problem
	for i, t := range a.Tokens {
		path := fmt.Sprintf("/global/services/management_api/auth/tokens/%d", i)
		var tok string
		switch {
		case t.Env != "":
			tok = os.Getenv(t.Env)
			if tok == "" {
				problems = append(problems, recipes.Problem{Path: path + "/env", Code: "token_source_unavailable",
					Message: fmt.Sprintf("environment variable %s (token %q) is not set or empty", t.Env, t.Name)})
				continue
			}
		default:
			b, err := os.ReadFile(t.File)
			if err != nil {
				problems = append(problems, recipes.Problem{Path: path + "/file", Code: "token_source_unavailable",
					Message: fmt.Sprintf("token %q: cannot read its file: %v", t.Name, err)})
				continue
			}
			tok = strings.TrimSpace(string(b))
			if tok == "" {
				problems = append(problems, recipes.Problem{Path: path + "/file", Code: "token_source_unavailable",
					Message: fmt.Sprintf("token %q: its file is empty", t.Name)})
				continue
			}
		}
		p := &Principal{Name: t.Name, Roles: slices.Clone(t.Roles), perms: map[string]bool{}}
		for _, r := range t.Roles {
			for _, perm := range roles[r] {
				if perm == "*" {
					p.all = true
				}
				p.perms[perm] = true
			}
		}
		out.tokens = append(out.tokens, tokenDigest{sum: sha256.Sum256([]byte(tok)), principal: p})
	}
	if len(problems) > 0 {
		return nil, &recipes.ValidationError{Problems: problems}
	}
	return out, nil
}

// authenticate returns the caller's principal, or nil when bearer mode is on
// and the request carries no valid token.
func (a *authenticator) authenticate(r *http.Request) *Principal {
	if a == nil || !a.bearer {
		return anonymous
	}
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return nil
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	var found *Principal
	// Compare against every digest so the time taken does not tell which
	// (or whether any) token matched.
	for i := range a.tokens {
		if subtle.ConstantTimeCompare(sum[:], a.tokens[i].sum[:]) == 1 {
			found = a.tokens[i].principal
		}
	}
	return found
}

type ctxKey int

const (
	principalKey ctxKey = iota
	requestIDKey
)

func principalOf(ctx context.Context) *Principal {
	if p, ok := ctx.Value(principalKey).(*Principal); ok {
		return p
	}
	return anonymous
}

func requestIDOf(ctx context.Context) string {
	s, _ := ctx.Value(requestIDKey).(string)
	return s
}

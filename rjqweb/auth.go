package rjqweb

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// challengeKey carries, in the request that Auth sees, where a built-in check writes its
// WWW-Authenticate challenge for the 401 answer.
type challengeKey struct{}

// authorized runs auth on req and, when it refuses, sets the challenge that the built-in
// checks leave (a hook of the user's leaves none).
func authorized(auth func(*http.Request) bool, w http.ResponseWriter, req *http.Request) bool {
	var challenge string
	if auth(req.WithContext(context.WithValue(req.Context(), challengeKey{}, &challenge))) {
		return true
	}
	if challenge != "" {
		w.Header().Set("WWW-Authenticate", challenge)
	}
	return false
}

// challenge leaves the WWW-Authenticate value of a refused request for authorized.
func challenge(req *http.Request, value string) {
	if p, ok := req.Context().Value(challengeKey{}).(*string); ok {
		*p = value
	}
}

// same compares two secrets in constant time, whatever their lengths.
func same(got, want string) bool {
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// BasicAuth returns an Options.Auth that admits requests carrying HTTP basic
// authentication with this user name and password, compared in constant time. A refused
// request is answered 401 with a Basic challenge, so that a browser asks for them. An
// empty password admits nobody.
func BasicAuth(user, pass string) func(*http.Request) bool {
	return func(req *http.Request) bool {
		u, p, ok := req.BasicAuth()
		userOK, passOK := same(u, user), same(p, pass) // both compared, whichever differs
		if ok && pass != "" && userOK && passOK {
			return true
		}
		challenge(req, `Basic realm="rjq", charset="UTF-8"`)
		return false
	}
}

// BearerToken returns an Options.Auth that admits requests whose Authorization header is
// "Bearer " and this token, compared in constant time: for Prometheus (its
// authorization or bearer_token settings), scripts and proxies that add the header; a
// browser cannot send it by itself, so give people BasicAuth. A refused request is
// answered 401 with a Bearer challenge. An empty token admits nobody.
func BearerToken(token string) func(*http.Request) bool {
	return func(req *http.Request) bool {
		scheme, got, _ := strings.Cut(req.Header.Get("Authorization"), " ")
		if strings.EqualFold(scheme, "Bearer") && token != "" && same(strings.TrimSpace(got), token) {
			return true
		}
		challenge(req, `Bearer realm="rjq"`)
		return false
	}
}

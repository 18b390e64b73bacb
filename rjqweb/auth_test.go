package rjqweb

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The built-in checks admit the right credentials only, and leave their challenge for
// the 401; a hook of the user's leaves none.
func TestAuthHelpers(t *testing.T) {
	basic := BasicAuth("ops", "pw")
	bearer := BearerToken("t0ken")
	const basicChallenge, bearerChallenge = `Basic realm="rjq", charset="UTF-8"`, `Bearer realm="rjq"`
	for _, tc := range []struct {
		name      string
		auth      func(*http.Request) bool
		header    string // Authorization
		admitted  bool
		challenge string
	}{
		{"basic, right", basic, "Basic b3BzOnB3", true, ""},                       // ops:pw
		{"basic, wrong password", basic, "Basic b3BzOnB4", false, basicChallenge}, // ops:px
		{"basic, wrong user", basic, "Basic b3B4OnB3", false, basicChallenge},     // opx:pw
		{"basic, none", basic, "", false, basicChallenge},
		{"basic, a bearer token", basic, "Bearer pw", false, basicChallenge},
		{"basic with an empty password admits nobody", BasicAuth("ops", ""), "Basic b3BzOg==", false, basicChallenge}, // ops:
		{"bearer, right", bearer, "Bearer t0ken", true, ""},
		{"bearer, any case of the scheme", bearer, "bearer t0ken", true, ""},
		{"bearer, wrong", bearer, "Bearer t0kem", false, bearerChallenge},
		{"bearer, a prefix of it", bearer, "Bearer t0k", false, bearerChallenge},
		{"bearer, none", bearer, "", false, bearerChallenge},
		{"bearer, basic", bearer, "Basic b3BzOnB3", false, bearerChallenge},
		{"bearer with an empty token admits nobody", BearerToken(""), "Bearer ", false, bearerChallenge},
		{"a hook of one's own", func(req *http.Request) bool { return req.Header.Get("X-Ok") != "" }, "", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/", nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			w := httptest.NewRecorder()
			assert.Equal(t, tc.admitted, authorized(tc.auth, w, req))
			assert.Equal(t, tc.challenge, w.Header().Get("WWW-Authenticate"))
			// Outside the handler the checks work alike, leaving their challenge nowhere.
			assert.Equal(t, tc.admitted, tc.auth(req))
		})
	}
}

func TestCleanPrefix(t *testing.T) {
	for in, want := range map[string]string{"": "/", "/": "/", "/jobs": "/jobs/", "/jobs/": "/jobs/", "/ops/queue": "/ops/queue/"} {
		got, err := cleanPrefix(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"jobs/", "/a//b/", "/a/../b/", "/./", "//"} {
		_, err := cleanPrefix(bad)
		assert.Error(t, err, bad)
	}
}

// New refuses options it cannot serve, before reading anything.
func TestNewRequiresQueueAndSession(t *testing.T) {
	_, err := New(Options{})
	assert.ErrorContains(t, err, "required")
}

package testserver

import (
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"
)

func TestDockerUp(t *testing.T) {
	serve := func(h http.HandlerFunc) string {
		sock := filepath.Join(t.TempDir(), "docker.sock")
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: h}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
		return "unix://" + sock
	}
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	for _, c := range []struct {
		name, host string
		want       bool
	}{
		{"ok", serve(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/_ping" {
				w.Write([]byte("OK"))
			}
		}), true},
		{"not docker", serve(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }), false},
		{"hangs", serve(func(http.ResponseWriter, *http.Request) { <-hang }), false},
		{"no socket", "unix://" + filepath.Join(t.TempDir(), "none.sock"), false},
		{"ssh", "ssh://user@host", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("DOCKER_HOST", c.host)
			start := time.Now()
			if got := dockerUp(); got != c.want {
				t.Errorf("dockerUp() = %v, want %v", got, c.want)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("dockerUp() took %v", d)
			}
		})
	}
}

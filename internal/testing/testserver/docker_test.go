package testserver

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

func TestParseAddr(t *testing.T) {
	for _, c := range []struct {
		name, out string
		ok        bool
		want      Server
		err       bool
	}{
		{"nothing yet", "", false, Server{}, false},
		{"half a line", "rethinkdb 127.0.0.1:327", false, Server{}, false},
		{"line", "rethinkdb 127.0.0.1:32768\n", true,
			Server{Addr: "127.0.0.1:32768", Host: "127.0.0.1", Port: 32768, Kind: Container}, false},
		{"after other output", "go: downloading x\r\nrethinkdb localhost:5\r\nmore\n", true,
			Server{Addr: "localhost:5", Host: "localhost", Port: 5, Kind: Container}, false},
		{"ipv6", "rethinkdb [::1]:32768\n", true,
			Server{Addr: "[::1]:32768", Host: "::1", Port: 32768, Kind: Container}, false},
		{"no port", "rethinkdb 127.0.0.1\n", false, Server{}, true},
		{"bad port", "rethinkdb 127.0.0.1:x\n", false, Server{}, true},
		{"port 0", "rethinkdb 127.0.0.1:0\n", false, Server{}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, ok, err := parseAddr([]byte(c.out))
			if (err != nil) != c.err || ok != c.ok || s != c.want {
				t.Errorf("parseAddr(%q) = %+v, %v, %v; want %+v, %v, error %v", c.out, s, ok, err, c.want, c.ok, c.err)
			}
		})
	}
}

// TestRunContainer runs stand-ins for the dockerrun module, which needs Docker, to check
// how the runner is started, read and stopped.
func TestRunContainer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds with go run")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command")
	}
	// runner writes a module whose main.go is src into a directory of its own.
	runner := func(t *testing.T, src string) string {
		dir := t.TempDir()
		files := map[string]string{"go.mod": "module runner\n\ngo 1.21\n", "main.go": src}
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	t.Setenv("GOWORK", "off") // the stand-ins are outside the workspace

	t.Run("address then stop", func(t *testing.T) {
		stopped := filepath.Join(t.TempDir(), "stopped")
		dir := runner(t, fmt.Sprintf(`package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	fmt.Println("rethinkdb 127.0.0.1:32768")
	io.Copy(io.Discard, os.Stdin)
	os.WriteFile(%q, nil, 0o644)
}
`, stopped))
		s, stop, err := runContainer(dir)
		if err != nil {
			t.Fatal(err)
		}
		if want := (Server{Addr: "127.0.0.1:32768", Host: "127.0.0.1", Port: 32768, Kind: Container}); s != want {
			t.Errorf("server %+v, want %+v", s, want)
		}
		stop()
		if _, err := os.Stat(stopped); err != nil {
			t.Errorf("runner not stopped through its standard input: %v", err)
		}
	})
	t.Run("fails", func(t *testing.T) {
		dir := runner(t, `package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "no Docker today")
	os.Exit(1)
}
`)
		_, _, err := runContainer(dir)
		if err == nil || !strings.Contains(err.Error(), "no Docker today") {
			t.Fatalf("runContainer: %v, want the runner's error output", err)
		}
	})
}

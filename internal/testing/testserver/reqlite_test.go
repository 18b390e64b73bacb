//go:build unix

package testserver

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// prepared installs reqlite, skipping t where it cannot be.
func prepared(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("installs reqlite")
	}
	dir, err := prepare()
	var skip skipError
	if errors.As(err, &skip) {
		t.Skip(skip)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLaunchPortTaken(t *testing.T) {
	dir := prepared(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	if port <= basePort {
		t.Skipf("kernel gave port %d, not above %d", port, basePort)
	}
	_, stop, err := launch(dir, port)
	if err == nil {
		stop()
	}
	if !errors.Is(err, errPortTaken) {
		t.Fatalf("launch on a taken port: %v, want errPortTaken", err)
	}
}

func TestStartDetached(t *testing.T) {
	prepared(t)
	tmp := t.TempDir()
	logFile, pidFile := filepath.Join(tmp, "reqlite.log"), filepath.Join(tmp, "reqlite.pid")
	s, pid, err := StartDetached(0, logFile, pidFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if b, err := os.ReadFile(pidFile); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(pid) {
		t.Errorf("pid file: %q, %v; want %d", b, err, pid)
	}
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		t.Errorf("reqlite's process group %d, %v; want one of its own", pgid, err)
	}
	if b, err := os.ReadFile(logFile); err != nil || !strings.Contains(string(b), "Listening") {
		t.Errorf("log file: %q, %v", b, err)
	}
	if !s.IsReqlite() || s.Kind != Reqlite || s.Addr != net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) {
		t.Errorf("server %+v", s)
	}
	c, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()

	t.Run("port in use", func(t *testing.T) {
		tmp := t.TempDir()
		pidFile := filepath.Join(tmp, "reqlite.pid")
		_, _, err := StartDetached(s.Port, filepath.Join(tmp, "reqlite.log"), pidFile)
		if err == nil || !strings.Contains(err.Error(), "in use") {
			t.Fatalf("StartDetached on a taken port: %v, want it in use", err)
		}
		if _, err := os.Stat(pidFile); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("pid file of a reqlite that did not start: %v", err)
		}
	})
}

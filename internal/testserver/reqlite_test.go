//go:build unix

package testserver

import (
	"errors"
	"net"
	"os/exec"
	"testing"
)

func TestLaunchPortTaken(t *testing.T) {
	if testing.Short() {
		t.Skip("installs reqlite")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("needs node and npm")
	}
	kit, err := findUp(kitDir, "package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := install(kit)
	if err != nil {
		t.Fatal(err)
	}
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

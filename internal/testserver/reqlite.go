//go:build unix

package testserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// basePort is reqlite's default driver port; reqlite only takes an offset from it.
const basePort = 28015

// kitDir holds the files that install reqlite, relative to the module root.
var kitDir = filepath.Join("testdata", "reqlite")

// kitFiles decide what gets installed, so the install directory is named by their hash.
var kitFiles = []string{"package.json", "package-lock.json", "reqlite-2.3.0-rethinkdb-go.patch"}

// errPortTaken means another process bound the chosen port before reqlite did.
var errPortTaken = errors.New("port taken")

// startReqlite installs reqlite if needed and starts one server for this binary on a free port.
func startReqlite() (Server, func(), error) {
	var missing []string
	for _, tool := range []string{"node", "npm", "patch"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		return Server{}, nil, skipError(howTo + " (not on PATH: " + strings.Join(missing, ", ") + ")")
	}
	kit, err := findUp(kitDir, "package-lock.json")
	if err != nil {
		return Server{}, nil, err
	}
	dir, err := install(kit)
	if err != nil {
		return Server{}, nil, err
	}
	for range 5 {
		port, err := freePort()
		if err != nil {
			return Server{}, nil, err
		}
		s, stop, err := launch(dir, port)
		if !errors.Is(err, errPortTaken) {
			return s, stop, err
		}
	}
	return Server{}, nil, errors.New("reqlite: no free port after 5 tries")
}

// install runs npm ci and applies the patch once per kit version into a cache directory
// shared by all test binaries. A file lock keeps binaries that go test runs in parallel
// from installing over each other; later runs find the marker and reuse the install.
func install(kit string) (string, error) {
	h := sha256.New()
	for _, f := range kitFiles {
		b, err := os.ReadFile(filepath.Join(kit, f))
		if err != nil {
			return "", fmt.Errorf("reqlite kit: %w", err)
		}
		h.Write(b)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "rjq-reqlite", hex.EncodeToString(h.Sum(nil))[:12])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close() // releases the lock
	for {
		err = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return "", fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	marker := filepath.Join(dir, "installed")
	_, errMarker := os.Stat(marker)
	_, errMods := os.Stat(filepath.Join(dir, "node_modules", "reqlite", "bin", "reqlite"))
	if errMarker == nil && errMods == nil {
		return dir, nil
	}
	for _, f := range kitFiles[:2] {
		b, err := os.ReadFile(filepath.Join(kit, f))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, f), b, 0o644)
		}
		if err != nil {
			return "", err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	steps := [][]string{
		{"npm", "ci", "--no-audit", "--no-fund"},
		{"patch", "-p1", "--forward", "-s", "-d", "node_modules/reqlite", "-i", filepath.Join(kit, kitFiles[2])},
	}
	for _, args := range steps {
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("reqlite install in %s: %s: %w\n%s", dir, args[0], err, tail(out))
		}
	}
	return dir, os.WriteFile(marker, nil, 0o644)
}

// launch starts reqlite on port and waits until it accepts connections.
func launch(dir string, port int) (Server, func(), error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.Command("node", filepath.Join("node_modules", ".bin", "reqlite"),
		"--port-offset", strconv.Itoa(port-basePort))
	cmd.Dir = dir
	cmd.SysProcAttr = sysProcAttr()
	// reqlite prints this from its listen callback, so it proves that this process, and
	// not some other one, owns the port.
	out := &logBuf{want: []byte("Listening for client driver connections on port " + strconv.Itoa(port) + "\n")}
	cmd.Stdout, cmd.Stderr = out, out

	started, exited := make(chan error), make(chan error, 1)
	go func() {
		// The parent-death signal fires when the thread that started the child exits, so
		// this goroutine keeps its thread until the child is gone.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return Server{}, nil, fmt.Errorf("start reqlite: %w", err)
	}
	stop := func() {
		cmd.Process.Kill() // reqlite keeps its data in memory: nothing to flush
		<-exited
	}

	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			// reqlite reports a listen error, such as the port being taken since freePort
			// saw it free, with this made-up message and exits.
			if bytes.Contains(out.bytes(), []byte("Server got SIGINT from pid 0")) {
				return Server{}, nil, errPortTaken
			}
			return Server{}, nil, fmt.Errorf("reqlite exited (%v):\n%s", err, tail(out.bytes()))
		case <-deadline:
			stop()
			return Server{}, nil, fmt.Errorf("reqlite not listening on %s after 10s:\n%s", addr, tail(out.bytes()))
		case <-tick.C:
			if !out.seen() {
				continue
			}
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				continue
			}
			c.Close()
			return Server{Addr: addr, Host: "127.0.0.1", Port: port, Kind: Reqlite, reqlite: true}, stop, nil
		}
	}
}

// freePort asks the kernel for a free port above basePort, as reqlite takes only a
// non-negative offset from it.
func freePort() (int, error) {
	for range 10 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port > basePort {
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free port above %d", basePort)
}

// Restartable is a reqlite server of one test's own, which the test may stop and start
// again on the same port, as a server restart or crash would. Like any reqlite restart, it
// comes back empty.
type Restartable struct {
	Server
	dir  string
	mu   sync.Mutex
	stop func() // nil while stopped
}

// Private starts a Restartable server for tb, stopped when tb ends. It skips tb when
// reqlite cannot be installed here (no Node.js).
func Private(tb testing.TB) *Restartable {
	tb.Helper()
	for _, tool := range []string{"node", "npm", "patch"} {
		if _, err := exec.LookPath(tool); err != nil {
			tb.Skipf("a private server needs reqlite, which needs %s on PATH", tool)
		}
	}
	kit, err := findUp(kitDir, "package-lock.json")
	if err != nil {
		tb.Fatal(err)
	}
	dir, err := install(kit)
	if err != nil {
		tb.Fatal(err)
	}
	s := &Restartable{dir: dir}
	for range 5 {
		port, err := freePort()
		if err != nil {
			tb.Fatal(err)
		}
		srv, stop, err := launch(dir, port)
		if errors.Is(err, errPortTaken) {
			continue
		}
		if err != nil {
			tb.Fatal(err)
		}
		s.Server, s.stop = srv, stop
		tb.Cleanup(s.Stop)
		return s
	}
	tb.Fatal("reqlite: no free port after 5 tries")
	return nil
}

// Stop kills the server; connections to it break at once.
func (s *Restartable) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop != nil {
		s.stop()
		s.stop = nil
	}
}

// Start starts the server again on its port, empty.
func (s *Restartable) Start(tb testing.TB) {
	tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop != nil {
		return
	}
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The port may be held a moment longer by the killed process's sockets.
		if _, s.stop, err = launch(s.dir, s.Port); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		tb.Fatalf("restart reqlite on %s: %v", s.Addr, err)
	}
}

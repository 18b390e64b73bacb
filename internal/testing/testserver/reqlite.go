//go:build unix

package testserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
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
const kitDir = "testdata/reqlite"

// kitFiles decide what gets installed, so the install directory is named by their hash.
var kitFiles = []string{"package.json", "package-lock.json", "reqlite-2.3.0-rethinkdb-go.patch"}

// errPortTaken means another process bound the chosen port before reqlite did.
var errPortTaken = errors.New("port taken")

// startReqlite installs reqlite if needed and starts one server for this binary on a free port.
func startReqlite() (s Server, stop func(), err error) {
	dir, err := prepare()
	var skip skipError
	if errors.As(err, &skip) {
		return Server{}, nil, skipError(howTo + " (" + string(skip) + ")")
	}
	if err != nil {
		return Server{}, nil, err
	}
	err = onFreePort(func(port int) (err error) {
		s, stop, err = launch(dir, port)
		return err
	})
	return s, stop, err
}

// StartDetached installs reqlite if needed and starts it in the background on port, or on
// a free port when port is 0, for tests run by something other than a test binary, such as
// CI. reqlite writes its output to logFile and, in a process group of its own, outlives
// this process. Its pid goes to pidFile as soon as it has started, so that whoever stops it
// can do so even when this process is interrupted before reqlite is ready. StartDetached
// returns once reqlite accepts connections, and kills it when it does not.
func StartDetached(port int, logFile, pidFile string) (s Server, pid int, err error) {
	if port != 0 && port <= basePort {
		return Server{}, 0, fmt.Errorf("reqlite takes ports above %d only, not %d", basePort, port)
	}
	dir, err := prepare()
	if err != nil {
		return Server{}, 0, err
	}
	start := func(port int) error {
		log, err := os.Create(logFile)
		if err != nil {
			return err
		}
		defer log.Close() // reqlite has its own descriptor
		p, err := spawn(dir, port, log, &syscall.SysProcAttr{Setpgid: true})
		if err != nil {
			return err
		}
		pid = p.cmd.Process.Pid
		err = os.WriteFile(pidFile, []byte(strconv.Itoa(pid)+"\n"), 0o644)
		if err == nil {
			err = p.await(port, fileOut{logFile, listenLine(port)})
		}
		if err != nil {
			p.kill()
			os.Remove(pidFile)
			return err
		}
		s = reqliteServer(port)
		return nil
	}
	if port == 0 {
		err = onFreePort(start)
	} else if err = start(port); errors.Is(err, errPortTaken) {
		err = fmt.Errorf("port %d is in use", port)
	}
	if err != nil {
		return Server{}, 0, err
	}
	return s, pid, nil
}

// prepare installs reqlite if needed and returns the install directory. Without node, npm
// or patch on PATH it returns a skipError.
func prepare() (string, error) {
	var missing []string
	for _, tool := range []string{"node", "npm", "patch"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		return "", skipError("reqlite needs " + strings.Join(missing, ", ") + " on PATH")
	}
	kit, err := repoDir(kitDir, "package-lock.json")
	if err != nil {
		return "", err
	}
	return install(kit)
}

// onFreePort calls start with a free port, and with another one while start finds that
// some other process took the port meanwhile.
func onFreePort(start func(port int) error) error {
	for range 5 {
		port, err := freePort()
		if err != nil {
			return err
		}
		if err := start(port); !errors.Is(err, errPortTaken) {
			return err
		}
	}
	return errors.New("reqlite: no free port after 5 tries")
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

// launch starts reqlite on port for this binary and waits until it accepts connections.
// reqlite dies with the binary (on Linux); its output is kept for error messages.
func launch(dir string, port int) (Server, func(), error) {
	out := &logBuf{want: listenLine(port)}
	p, err := spawn(dir, port, out, sysProcAttr())
	if err != nil {
		return Server{}, nil, err
	}
	if err := p.await(port, out); err != nil {
		return Server{}, nil, err
	}
	return reqliteServer(port), p.kill, nil
}

func reqliteServer(port int) Server {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	return Server{Addr: addr, Host: "127.0.0.1", Port: port, Kind: Reqlite, reqlite: true}
}

// reqliteProc is a reqlite process started here.
type reqliteProc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // Wait's result, once done is closed
}

// spawn starts reqlite, installed in dir, on port with its output going to out.
func spawn(dir string, port int, out io.Writer, attr *syscall.SysProcAttr) (*reqliteProc, error) {
	cmd := exec.Command("node", filepath.Join("node_modules", ".bin", "reqlite"),
		"--port-offset", strconv.Itoa(port-basePort))
	cmd.Dir = dir
	cmd.SysProcAttr = attr
	cmd.Stdout, cmd.Stderr = out, out
	p := &reqliteProc{cmd: cmd, done: make(chan struct{})}
	started := make(chan error)
	go func() {
		// The parent-death signal fires when the thread that started the child exits, so
		// this goroutine keeps its thread until the child is gone.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start reqlite: %w", err)
	}
	return p, nil
}

// kill stops reqlite, which keeps its data in memory (nothing to flush), and waits for it
// to exit. It does nothing more when reqlite has exited already.
func (p *reqliteProc) kill() {
	p.cmd.Process.Kill()
	<-p.done
}

// output is reqlite's output as await reads it: a logBuf, or a log file.
type output interface {
	seen() bool // whether the line await waits for has appeared
	bytes() []byte
}

// fileOut is the output of a reqlite writing to the file at path.
type fileOut struct {
	path string
	want []byte
}

func (f fileOut) bytes() []byte {
	b, _ := os.ReadFile(f.path)
	return b
}

func (f fileOut) seen() bool { return bytes.Contains(f.bytes(), f.want) }

// listenLine is what reqlite prints from its listen callback, so it proves that this
// process, and not some other one, owns the port.
func listenLine(port int) []byte {
	return []byte("Listening for client driver connections on port " + strconv.Itoa(port) + "\n")
}

// await waits until reqlite has printed its listen line to out and accepts connections on
// port. It returns errPortTaken when another process holds the port, and kills reqlite when
// it is not ready in time.
func (p *reqliteProc) await(port int, out output) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.done:
			// reqlite reports a listen error, such as the port being taken since freePort
			// saw it free, with this made-up message and exits.
			if bytes.Contains(out.bytes(), []byte("Server got SIGINT from pid 0")) {
				return errPortTaken
			}
			return fmt.Errorf("reqlite exited (%v):\n%s", p.err, tail(out.bytes()))
		case <-deadline:
			p.kill()
			return fmt.Errorf("reqlite not listening on %s after 10s:\n%s", addr, tail(out.bytes()))
		case <-tick.C:
			if !out.seen() {
				continue
			}
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				continue
			}
			c.Close()
			return nil
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
	dir, err := prepare()
	var skip skipError
	if errors.As(err, &skip) {
		tb.Skipf("a private server needs reqlite: %s", skip)
	}
	if err != nil {
		tb.Fatal(err)
	}
	s := &Restartable{dir: dir}
	err = onFreePort(func(port int) (err error) {
		s.Server, s.stop, err = launch(dir, port)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
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

// ReqliteKit installs reqlite if needed, as the tests do, and returns the directory that
// holds it (node_modules/reqlite/bin/reqlite runs it), for packing it into an image.
func ReqliteKit() (string, error) { return prepare() }

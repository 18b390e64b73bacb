package testserver

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// NodeQueue runs the original Node.js library (rethinkdb-job-queue 3.1.7 from npm, with
// the script testdata/node-interop/interop.js) on one queue, as a Node.js worker or
// producer sharing it would.
type NodeQueue struct {
	dir   string
	srv   Server
	db    string
	queue string
}

// Node installs the Node.js library into a temporary folder for a queue of db on srv. It
// skips the test when Node.js, npm or the npm registry is missing.
func Node(tb testing.TB, srv Server, db, queue string) *NodeQueue {
	tb.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			tb.Skipf("this test runs the Node.js library and needs %s on PATH", tool)
		}
	}
	src, err := repoDir("testdata/node-interop", "interop.js")
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "interop.js"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	install := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		tb.Skipf("installing rethinkdb-job-queue 3.1.7 from the npm registry failed (offline?): %v\n%s", err, out)
	}
	return &NodeQueue{dir: dir, srv: srv, db: db, queue: queue}
}

// Run runs interop.js in mode (add, process, …; see the script) and returns what it
// printed, trimmed. It fails the test when the script fails or runs over a minute.
func (n *NodeQueue) Run(tb testing.TB, mode string, args ...string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"interop.js", mode, n.srv.Host, strconv.Itoa(n.srv.Port), n.db, n.queue}, args...)...)
	cmd.Dir = n.dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("node interop.js %s: %v: %s", mode, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

package testserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunnerFoundFromSource fails when the runner module moves away from this package, or
// when the runner and this package disagree on the address line or the default image:
// every test through a container would fail then, and no run without Docker would notice.
func TestRunnerFoundFromSource(t *testing.T) {
	t.Chdir(t.TempDir()) // found from the source, wherever the tests run
	dir, err := runnerDir()
	if err != nil {
		t.Fatal(err)
	}
	main, err := os.ReadFile(filepath.Join(dir, "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`addrPrefix = "` + addrPrefix + `"`,
		`defaultImage = "` + defaultImage + `"`,
		`"RJQ_TEST_IMAGE"`,
	} {
		if !strings.Contains(string(main), want) {
			t.Errorf("%s does not hold %s, which this package relies on", filepath.Join(dir, "main.go"), want)
		}
	}
	for _, rel := range []string{kitDir, "testdata/node-interop"} {
		if _, err := repoDir(rel, "package-lock.json"); err != nil {
			t.Error(err)
		}
	}
}

func TestCheckModule(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) {
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := checkModule(dir, "a/b"); err == nil {
		t.Error("no go.mod: no error")
	}
	write("// comment\nmodule \"a/b\"\n\ngo 1.26\n")
	if err := checkModule(dir, "a/b"); err != nil {
		t.Error(err)
	}
	if err := checkModule(dir, "a/c"); err == nil || !strings.Contains(err.Error(), "not a/c") {
		t.Errorf("another module: %v", err)
	}
	write("go 1.26\n")
	if err := checkModule(dir, "a/b"); err == nil {
		t.Error("no module line: no error")
	}
}

func TestReason(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"plain", os.ErrNotExist, "file does not exist"},
		{"runner's last line", &runnerError{exit: os.ErrClosed, out: []byte("go: downloading x\n2026/11/25 log\ndockerrun: start img container: no such image\n")}, "start img container: no such image"},
		{"runner without its line", &runnerError{exit: os.ErrClosed, out: []byte("panic\n")}, os.ErrClosed.Error()},
		{"long", &runnerError{exit: os.ErrClosed, out: []byte("dockerrun: " + strings.Repeat("x", 400) + "\n")}, strings.Repeat("x", 297) + "..."},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := reason(c.err); got != c.want {
				t.Errorf("reason = %q, want %q", got, c.want)
			}
		})
	}
}

package testserver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// The module path of the library, which holds this package, and the import path of the
// runner module, which lives in this package's dockerrun directory.
const (
	modulePath = "github.com/rjqgo/rethinkdb-job-queue"
	runnerPath = modulePath + "/internal/testing/testserver/dockerrun"
)

// sourceDir is the directory of this package's source files, as the compiler saw it.
// Tests are built from source, so it names the checkout the test binary came from, wherever
// go test runs and whichever module's tests import this package (cmd/rjq's and rjqweb's
// do). It is "" when the binary was built with -trimpath, which hides the path.
func sourceDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	return filepath.Dir(file)
}

// moduleRoot is the root of the library's module: three levels above this package. It
// checks the module line of the go.mod it finds there, so a package that moved fails here
// with its reason instead of with a missing file later. With -trimpath it falls back to the
// nearest go.mod of the library above the working directory.
func moduleRoot() (string, error) {
	if dir := sourceDir(); dir != "" {
		root := filepath.Join(dir, "..", "..", "..")
		if err := checkModule(root, modulePath); err != nil {
			return "", fmt.Errorf("testserver: the library's root from this package's source (%s): %w", dir, err)
		}
		return filepath.Clean(root), nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if checkModule(dir, modulePath) == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("testserver: built with -trimpath and not run inside the library's module: cannot find " + modulePath)
		}
		dir = up
	}
}

// runnerDir is the runner module's directory: dockerrun beside this package's source.
func runnerDir() (string, error) {
	var dir string
	if src := sourceDir(); src != "" {
		dir = filepath.Join(src, "dockerrun")
	} else {
		root, err := moduleRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "internal", "testing", "testserver", "dockerrun")
	}
	if err := checkModule(dir, runnerPath); err != nil {
		return "", fmt.Errorf("testserver: the container runner: %w", err)
	}
	return dir, nil
}

// repoDir is dir, a directory of the library's module given by its slash-separated path
// from the root (such as "testdata/reqlite"), checked to hold marker.
func repoDir(rel, marker string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, filepath.FromSlash(rel))
	if _, err := os.Stat(filepath.Join(dir, marker)); err != nil {
		return "", fmt.Errorf("testserver: %s not found in the library's module at %s: %w", rel, root, err)
	}
	return dir, nil
}

// checkModule reports whether dir holds the go.mod of module path.
func checkModule(dir, path string) error {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			if strings.Trim(f[1], `"`) != path {
				return fmt.Errorf("%s is module %s, not %s", filepath.Join(dir, "go.mod"), f[1], path)
			}
			return nil
		}
	}
	return fmt.Errorf("%s has no module line", filepath.Join(dir, "go.mod"))
}

//go:build ignore

// modcheck proves that the published modules install the way the go command will see them
// once tagged, without the workspace (GOWORK=off) and without replace directives:
//
//	go run .ci/modcheck.go
//
// It serves every published module of the repository from a file proxy, each at the
// version the others require, then runs `go install .../cmd/rjq@<version>` as a user would,
// and builds two throwaway programs outside the repository that `go get` rjqweb and rjqotel
// and use them. Other modules come from the local module cache, then from GOPROXY.
//
// A module required at a pseudo-version (the root, which cmd/rjq, rjqweb and rjqotel
// require, and rjqweb, which cmd/rjq requires) is served from that commit, as the real
// proxy will serve it: so the check fails when a sub-module uses something its required
// version lacks. The commit must be in this branch's history and the pseudo-version's time
// must be the commit's. A module nobody requires is served from the working tree. It fails
// too when a go.mod holds a replace directive, or when the sub-modules require different
// versions of one module.
//
//	go run .ci/modcheck.go -bump
//
// rewrites every such requirement (and go.work's replace lines) to HEAD's pseudo-version,
// for when a sub-module needs what the library gained since; commit the result.
package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

const root = "github.com/rjqgo/rethinkdb-job-queue"

// published are the modules users install, by directory; the root requires none of them.
var published = []string{".", "rjqweb", "rjqotel", "cmd/rjq"}

// release is the version the sub-modules are served at here, from the working tree: what
// the next tag will be. (rjqweb, which cmd/rjq requires, is served at that requirement
// too, from its commit.)
const release = "v0.99.0"

func main() {
	var err error
	if len(os.Args) == 2 && os.Args[1] == "-bump" {
		err = bump()
	} else if len(os.Args) > 1 {
		err = errors.New("usage: go run .ci/modcheck.go [-bump]")
	} else {
		err = run()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "modcheck:", err)
		os.Exit(1)
	}
	fmt.Println("modcheck: ok")
}

// run serves the published modules from a file proxy and checks that cmd/rjq installs,
// and that programs of a user's own that go get rjqweb and rjqotel build, from it alone.
func run() error {
	mods, err := readPublished()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "rjq-modcheck-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	proxy := filepath.Join(tmp, "proxy")
	if err := serveAll(tmp, proxy, mods); err != nil {
		return err
	}
	env, err := userEnv(tmp, proxy)
	if err != nil {
		return err
	}
	// The temporary module cache is read-only; go clean empties it before RemoveAll.
	defer func() {
		c := exec.Command("go", "clean", "-modcache")
		c.Env = env
		c.Run()
	}()
	if err := checkInstall(tmp, env, mods[root+"/cmd/rjq"]); err != nil {
		return err
	}
	return checkUserPrograms(tmp, env)
}

// readPublished reads the published modules, by module path, each at the release
// version, and checks that the sub-modules require one version of each module of the
// repository, the root among them.
func readPublished() (map[string]*module, error) {
	mods := map[string]*module{} // by module path
	for _, dir := range published {
		m, err := readModule(dir)
		if err != nil {
			return nil, err
		}
		mods[m.path] = m
	}
	// The sub-modules require one version of each module of the repository.
	required := map[string]string{}
	for _, m := range mods {
		for _, req := range m.requires {
			if v, ok := required[req.path]; ok && v != req.version {
				return nil, fmt.Errorf("%s requires %s %s, another module %s: require one version everywhere (RELEASING.md)", m.path, req.path, req.version, v)
			}
			required[req.path] = req.version
		}
	}
	if required[root] == "" {
		return nil, errors.New("no sub-module requires the root module")
	}
	// The sub-modules are served from the working tree at a release version, as the next
	// tag will serve them (a user's go install …@latest, go get …@latest); what they
	// require, at the versions they require, each from its commit.
	for _, m := range mods {
		m.version = release
	}
	return mods, nil
}

// serveAll writes to the proxy directory each sub-module of mods at its version, then
// every version of a module of the repository that a served go.mod requires (rjqweb at
// a commit may require the library at an earlier one), each from its commit.
func serveAll(tmp, proxy string, mods map[string]*module) error {
	var todo []requirement
	for _, m := range mods {
		if m.path != root {
			todo = append(todo, requirement{m.path, m.version})
		}
	}
	served := map[requirement]bool{}
	for len(todo) > 0 {
		req := todo[0]
		todo = todo[1:]
		if served[req] {
			continue
		}
		served[req] = true
		m, from, err := moduleAt(tmp, req)
		if err != nil {
			return err
		}
		if err := m.serve(proxy); err != nil {
			return fmt.Errorf("serve %s: %w", m.path, err)
		}
		fmt.Printf("modcheck: serving %s@%s from %s\n", m.path, m.version, from)
		todo = append(todo, m.requires...)
	}
	return nil
}

// userEnv is the environment of a user's go command: no workspace, the proxy directory
// first, then the local module cache, then GOPROXY, and a module cache, GOPATH and GOBIN
// of its own under tmp.
func userEnv(tmp, proxy string) ([]string, error) {
	cache, err := goEnv("GOMODCACHE")
	if err != nil {
		return nil, err
	}
	upstream, err := goEnv("GOPROXY")
	if err != nil {
		return nil, err
	}
	return append(os.Environ(),
		"GOWORK=off",
		"GOFLAGS=",
		"GOPROXY="+fileURL(proxy)+","+fileURL(filepath.Join(cache, "cache", "download"))+","+upstream,
		"GOMODCACHE="+filepath.Join(tmp, "modcache"),
		"GOPATH="+filepath.Join(tmp, "gopath"),
		"GOBIN="+filepath.Join(tmp, "bin"),
		// Not yet in the checksum database: these versions exist only here.
		"GONOSUMDB="+root,
	), nil
}

// checkInstall runs go install cmd/rjq@version from a directory outside any module,
// and the installed rjq --help.
func checkInstall(tmp string, env []string, rjq *module) error {
	if err := goCmd(tmp, env, "install", rjq.path+"@"+rjq.version); err != nil {
		return err
	}
	out, err := exec.Command(filepath.Join(tmp, "bin", "rjq"), "--help").CombinedOutput()
	if !bytes.Contains(out, []byte("summary")) {
		return fmt.Errorf("the installed rjq --help: %v\n%s", err, out)
	}
	fmt.Println("modcheck: go install " + rjq.path + "@" + rjq.version + ": ok")
	return nil
}

// checkUserPrograms builds programs of a user's own that go get rjqweb and rjqotel.
func checkUserPrograms(tmp string, env []string) error {
	for _, p := range []struct{ mod, src string }{
		{root + "/rjqweb", webProgram},
		{root + "/rjqotel", otelProgram},
	} {
		dir := filepath.Join(tmp, path.Base(p.mod)+"-user")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		files := map[string]string{"go.mod": "module example.com/user\n\ngo 1.26\n", "main.go": p.src}
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				return err
			}
		}
		steps := [][]string{{"get", p.mod + "@" + release}, {"mod", "tidy"}, {"build", "-o", os.DevNull, "."}}
		for _, args := range steps {
			if err := goCmd(dir, env, args...); err != nil {
				return err
			}
		}
		fmt.Printf("modcheck: a program that go gets %s@%s builds: ok\n", p.mod, release)
	}
	return nil
}

const webProgram = `package main

import (
	"context"
	"log"
	"net/http"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/queue"
	"github.com/rjqgo/rethinkdb-job-queue/rjqweb"
)

func main() {
	ctx := context.Background()
	s, err := r.Connect(r.ConnectOpts{Address: "localhost:28015"})
	if err != nil {
		log.Fatal(err)
	}
	q, err := queue.New(ctx, &queue.ConnectOptions{Session: s}, &queue.Options{Name: "mail"})
	if err != nil {
		log.Fatal(err)
	}
	h, err := rjqweb.New(rjqweb.Options{Queue: q, Session: s, Prefix: "/jobs/"})
	if err != nil {
		log.Fatal(err)
	}
	http.Handle("/jobs/", h)
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", nil))
}
`

const otelProgram = `package main

import (
	"context"
	"log"

	"github.com/rjqgo/rethinkdb-job-queue/queue"
	"github.com/rjqgo/rethinkdb-job-queue/rjqotel"
)

func main() {
	q, err := queue.New(context.Background(), nil, &queue.Options{
		Middleware: []queue.Middleware{rjqotel.Middleware(rjqotel.Options{})},
	})
	if err != nil {
		log.Fatal(err)
	}
	q.Stop(context.Background())
}
`

// moduleAt is the module req names: from the commit of a pseudo-version, else from the
// working tree.
func moduleAt(tmp string, req requirement) (*module, string, error) {
	dir := "." + strings.TrimPrefix(req.path, root)
	from := "the working tree"
	if commit, ok := pseudoCommit(req.version); ok {
		src, err := checkout(tmp, req.version, commit)
		if err != nil {
			return nil, "", fmt.Errorf("%s@%s: %w", req.path, req.version, err)
		}
		dir = filepath.Join(src, dir)
		from = "commit " + commit
	}
	m, err := readModule(dir)
	if err != nil {
		return nil, "", err
	}
	if m.path != req.path {
		return nil, "", fmt.Errorf("%s holds module %s, not %s", dir, m.path, req.path)
	}
	m.version = req.version
	return m, from, nil
}

// module is one published module of the working tree.
type module struct {
	dir, path, version string
	gomod              []byte
	requires           []requirement
}

type requirement struct{ path, version string }

var (
	moduleLine  = regexp.MustCompile(`(?m)^module\s+(\S+)`)
	replaceLine = regexp.MustCompile(`(?m)^\s*replace\b`)
	requireLine = regexp.MustCompile(`(?m)^\s*(?:require\s+)?(` + regexp.QuoteMeta(root) + `\S*)\s+(v\S+)`)
)

func readModule(dir string) (*module, error) {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil, err
	}
	mm := moduleLine.FindSubmatch(b)
	if mm == nil {
		return nil, fmt.Errorf("%s/go.mod: no module line", dir)
	}
	if replaceLine.Match(b) {
		return nil, fmt.Errorf("%s/go.mod has a replace directive: go install refuses it, and every user would need one of their own (go.work serves development)", dir)
	}
	m := &module{dir: dir, path: string(mm[1]), gomod: b}
	for _, req := range requireLine.FindAllSubmatch(b, -1) {
		if p := string(req[1]); p != m.path {
			m.requires = append(m.requires, requirement{p, string(req[2])})
		}
	}
	return m, nil
}

// serve writes the module to the proxy at dir, as a proxy serves a tagged version:
// list, info, mod and zip. The zip holds the module's files as the go command packs them:
// no nested module, no version-control or dot directories.
func (m *module) serve(proxy string) error {
	at := filepath.Join(proxy, filepath.FromSlash(m.path), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}
	info, _ := json.Marshal(map[string]any{"Version": m.version, "Time": time.Now().UTC().Format(time.RFC3339)})
	list, _ := os.ReadFile(filepath.Join(at, "list"))
	list = append(list, m.version+"\n"...)
	files := map[string][]byte{"list": list, m.version + ".info": info, m.version + ".mod": m.gomod}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(at, name), b, 0o644); err != nil {
			return err
		}
	}
	f, err := os.Create(filepath.Join(at, m.version+".zip"))
	if err != nil {
		return err
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	prefix := m.path + "@" + m.version + "/"
	err = filepath.WalkDir(m.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p == m.dir {
				return nil
			}
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(m.dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		w, err := zw.Create(prefix + filepath.ToSlash(rel))
		if err == nil {
			_, err = w.Write(b)
		}
		return err
	})
	if err != nil {
		return err
	}
	return zw.Close()
}

var pseudo = regexp.MustCompile(`^v0\.0\.0-(\d{14})-([0-9a-f]{12})$`)

// pseudoCommit is the commit a pseudo-version names.
func pseudoCommit(version string) (string, bool) {
	m := pseudo.FindStringSubmatch(version)
	if m == nil {
		return "", false
	}
	return m[2], true
}

// checkout extracts commit into a directory under tmp, once it has checked that the commit
// is in HEAD's history and that version's time is the commit's, as the proxy will.
func checkout(tmp, version, commit string) (string, error) {
	if err := exec.Command("git", "merge-base", "--is-ancestor", commit, "HEAD").Run(); err != nil {
		return "", fmt.Errorf("commit %s is not in this branch's history (%v): require a commit of main (go run .ci/modcheck.go -bump)", commit, err)
	}
	want, err := pseudoVersion(commit)
	if err != nil {
		return "", err
	}
	if want != version {
		return "", fmt.Errorf("the pseudo-version of commit %s is %s", commit, want)
	}
	dir := filepath.Join(tmp, "src-"+commit)
	if _, err := os.Stat(dir); err == nil {
		return dir, nil // extracted already
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	archive := exec.Command("git", "archive", "--format=tar", commit)
	untar := exec.Command("tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return "", err
	}
	untar.Stdin = pipe
	if err := untar.Start(); err != nil {
		return "", err
	}
	if err := archive.Run(); err != nil {
		return "", fmt.Errorf("git archive %s: %w", commit, err)
	}
	return dir, untar.Wait()
}

// pseudoVersion is the v0.0.0 pseudo-version of a commit: its commit time in UTC and
// the first 12 digits of its hash.
func pseudoVersion(commit string) (string, error) {
	cmd := exec.Command("git", "log", "-1", "--date=format-local:%Y%m%d%H%M%S", "--format=%cd %H", commit)
	cmd.Env = append(os.Environ(), "TZ=UTC")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git log %s: %w", commit, err)
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return "", fmt.Errorf("git log %s: %q", commit, out)
	}
	return "v0.0.0-" + f[0] + "-" + f[1][:12], nil
}

// bump rewrites the pseudo-version requirements among the published modules, and go.work's
// replace lines, to HEAD's.
func bump() error {
	if out, _ := exec.Command("git", "status", "--porcelain").Output(); len(out) > 0 {
		return errors.New("commit first: the new requirements name HEAD, which must hold the change")
	}
	head, err := pseudoVersion("HEAD")
	if err != nil {
		return err
	}
	files := []string{"go.work"}
	for _, dir := range published {
		files = append(files, filepath.Join(dir, "go.mod"))
	}
	req := regexp.MustCompile(`(` + regexp.QuoteMeta(root) + `\S*\s+)v0\.0\.0-\d{14}-[0-9a-f]{12}`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		nb := req.ReplaceAll(b, []byte("${1}"+head))
		if !bytes.Equal(b, nb) {
			if err := os.WriteFile(f, nb, 0o644); err != nil {
				return err
			}
			fmt.Printf("modcheck: %s requires %s now\n", f, head)
		}
	}
	return nil
}

func goEnv(name string) (string, error) {
	out, err := exec.Command("go", "env", name).Output()
	return strings.TrimSpace(string(out)), err
}

func goCmd(dir string, env []string, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go %s (in %s): %w\n%s", strings.Join(args, " "), dir, err, out)
	}
	return nil
}

func fileURL(p string) string {
	return "file://" + filepath.ToSlash(p)
}

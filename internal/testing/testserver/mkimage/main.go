// Command mkimage makes a Docker image that serves the RethinkDB driver protocol on port
// 28015, without any image registry, for the integration tests' container path
// (RJQ_TEST_IMAGE). By default it packs reqlite, installed from the kit in testdata/reqlite
// as the tests install it, with this machine's Node.js; with -rethinkdb it packs a RethinkDB
// server binary you have (a local build, say) instead. Either way the image holds the
// binary and the shared libraries ldd names, nothing else, and is loaded with docker
// import.
//
//	go run ./internal/testing/testserver/mkimage [-tag rjq-test-reqlite:local] [-rethinkdb PATH]
//
// It prints the tag once the engine has the image. CI runs it, then the tests with
// RJQ_TEST_IMAGE set to the tag.
package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
)

func main() {
	tag := flag.String("tag", "rjq-test-reqlite:local", "the image's name")
	server := flag.String("rethinkdb", "", "a RethinkDB server binary to pack instead of reqlite")
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*tag, *server); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
	fmt.Println(*tag)
}

// image is what goes into the image: files by their path in it, and docker import's
// --change instructions.
type image struct {
	files   map[string]string // path in the image → path here
	dirs    []string          // empty directories to make
	changes []string
}

func run(tag, server string) error {
	var img image
	var err error
	if server != "" {
		img, err = rethinkdbImage(server)
	} else {
		img, err = reqliteImage()
	}
	if err != nil {
		return err
	}
	return img.load(tag)
}

// reqliteImage packs node and the installed reqlite kit; reqlite listens on every
// interface of the container (REQLITE_BIND; its default is loopback only).
func reqliteImage() (image, error) {
	kit, err := testserver.ReqliteKit()
	if err != nil {
		return image{}, err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return image{}, err
	}
	img := image{files: map[string]string{}, dirs: []string{"/tmp"}}
	if err := img.addBinary("/usr/bin/node", node); err != nil {
		return image{}, err
	}
	for _, rel := range []string{"node_modules", "package.json"} {
		if err := img.addTree("/reqlite/"+rel, filepath.Join(kit, rel)); err != nil {
			return image{}, err
		}
	}
	img.changes = []string{
		"ENV REQLITE_BIND=0.0.0.0",
		"EXPOSE 28015",
		"WORKDIR /reqlite",
		`ENTRYPOINT ["/usr/bin/node", "/reqlite/node_modules/reqlite/bin/reqlite"]`,
	}
	return img, nil
}

// rethinkdbImage packs a RethinkDB server binary, serving on every interface with its
// data in /data.
func rethinkdbImage(bin string) (image, error) {
	img := image{files: map[string]string{}, dirs: []string{"/tmp", "/data"}}
	if err := img.addBinary("/usr/bin/rethinkdb", bin); err != nil {
		return image{}, err
	}
	img.changes = []string{
		"EXPOSE 28015 29015 8080",
		"WORKDIR /data",
		`ENTRYPOINT ["/usr/bin/rethinkdb", "--bind", "all", "--directory", "/data/rethinkdb_data"]`,
	}
	return img, nil
}

// addBinary adds the program at src as dst, with the shared libraries ldd lists for it at
// the paths ldd gives.
func (img *image) addBinary(dst, src string) error {
	img.files[dst] = src
	out, err := exec.Command("ldd", src).Output()
	if err != nil {
		return fmt.Errorf("ldd %s: %w", src, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		// "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or "/lib64/ld-linux-x86-64.so.2 (0x...)"
		f := strings.Fields(sc.Text())
		var lib string
		switch {
		case len(f) >= 3 && f[1] == "=>":
			lib = f[2]
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			lib = f[0]
		}
		if strings.HasPrefix(lib, "/") {
			img.files[lib] = lib
		}
	}
	return sc.Err()
}

// addTree adds the files under src below dst.
func (img *image) addTree(dst, src string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err == nil {
			img.files[path.Join(dst, filepath.ToSlash(rel))] = p
		}
		return err
	})
}

// load writes the image as a tar stream to docker import.
func (img image) load(tag string) error {
	args := []string{"import"}
	for _, c := range img.changes {
		args = append(args, "--change", c)
	}
	cmd := exec.Command("docker", append(args, "-", tag)...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("docker import: %w", err)
	}
	werr := img.write(in)
	in.Close()
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("docker import: %w: %s", err, errOut.String())
	}
	return werr
}

// write writes the image's files, with their parent directories, as a tar stream.
func (img image) write(w io.Writer) error {
	tw := tar.NewWriter(w)
	made := map[string]bool{"/": true}
	var mkdir func(dir string) error
	mkdir = func(dir string) error {
		if made[dir] {
			return nil
		}
		if err := mkdir(path.Dir(dir)); err != nil {
			return err
		}
		made[dir] = true
		mode := int64(0o755)
		if dir == "/tmp" {
			mode = 0o1777
		}
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(dir, "/") + "/", Mode: mode})
	}
	for _, d := range img.dirs {
		if err := mkdir(d); err != nil {
			return err
		}
	}
	for dst, src := range img.files {
		if err := mkdir(path.Dir(dst)); err != nil {
			return err
		}
		if err := addFile(tw, dst, src); err != nil {
			return err
		}
	}
	return tw.Close()
}

// addFile writes the file at src (following symbolic links) as dst.
func addFile(tw *tar.Writer, dst, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(dst, "/"), Mode: int64(st.Mode().Perm()), Size: st.Size(), ModTime: st.ModTime()}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

package rjq_test

import (
	"os/exec"
	"regexp"
	"testing"
)

// The public packages' documentation, as `go doc -all` prints it, names no internal
// package, engine or processor: a user reads the API, not the library's plumbing.
func TestPublicDocsNameNoInternals(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go doc")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command")
	}
	// queue and job, the packages every user reads, name none of them at all; the others
	// (where "Docker engine" is English) name no internal package or identifier.
	strict := regexp.MustCompile(`(?i)\binternal\b|\bengine\b|\bprocessor\b`)
	loose := regexp.MustCompile(`internal/\w|\bengine\.|\bprocessor\.`)
	for _, pkg := range []string{"./queue", "./job", "./rjqtest", "./changefeed", "./dbinit", "./master", "./metrics"} {
		internal := loose
		if pkg == "./queue" || pkg == "./job" {
			internal = strict
		}
		out, err := exec.Command(goTool, "doc", "-all", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go doc %s: %v\n%s", pkg, err, out)
		}
		for _, m := range internal.FindAllIndex(out, -1) {
			start, end := max(m[0]-60, 0), min(m[1]+60, len(out))
			t.Errorf("go doc -all %s names %q: …%s…", pkg, out[m[0]:m[1]], out[start:end])
		}
	}
}

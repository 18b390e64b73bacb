package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// installNode installs the original from testdata/node-interop into a temporary folder
// with its bench script, and returns the folder.
func installNode() (string, error) {
	dir, err := os.MkdirTemp("", "rjqbench-node")
	if err != nil {
		return "", err
	}
	for _, f := range []string{"testdata/node-interop/package.json", "testdata/node-interop/package-lock.json", "cmd/rjqbench/bench.js"} {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("%w (run from the repository root)", err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			return "", err
		}
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm ci: %v\n%s", err, out)
	}
	return dir, nil
}

// runNode runs bench.js in mode and decodes the JSON it prints last; onStart, when not
// nil, is called when the script prints "start" (the measured part begins).
func runNode(dir, addr string, out any, onStart func(), mode string, args ...int) error {
	host, port := splitAddr(addr)
	_, db, drop, err := scratch(addr)
	if err != nil {
		return err
	}
	defer drop()
	argv := []string{"bench.js", mode, host, strconv.Itoa(port), db}
	for _, a := range args {
		argv = append(argv, strconv.Itoa(a))
	}
	cmd := exec.Command("node", argv...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	var last string
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		if sc.Text() == "start" && onStart != nil {
			onStart()
			continue
		}
		last = sc.Text()
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("node %s: %w", mode, err)
	}
	return json.Unmarshal([]byte(last), out)
}

// nodeProcess measures the original's processing, with the server's CPU from the start of
// processing to the script's end (its last completions and stop).
func nodeProcess(dir, addr string, c, n int, cpu cpuMeter) (result, error) {
	var res struct {
		JobsPerSec float64 `json:"jobsPerSec"`
	}
	var used func() time.Duration
	err := runNode(dir, addr, &res, func() { used = cpu.span() }, "process", c, n)
	out := result{jobsPerSec: res.JobsPerSec, jobs: n}
	if used != nil {
		out.cpu = used()
	}
	return out, err
}

func nodeAddRate(dir, addr string, n int) (float64, error) {
	var res struct {
		JobsPerSec float64 `json:"jobsPerSec"`
	}
	err := runNode(dir, addr, &res, nil, "add", n)
	return res.JobsPerSec, err
}

func nodeLatency(dir, addr string, n int) ([]time.Duration, error) {
	var res struct {
		Millis []float64 `json:"millis"`
	}
	if err := runNode(dir, addr, &res, nil, "latency", n); err != nil {
		return nil, err
	}
	out := make([]time.Duration, len(res.Millis))
	for i, m := range res.Millis {
		out[i] = time.Duration(m * float64(time.Millisecond))
	}
	return out, nil
}

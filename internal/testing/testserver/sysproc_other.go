//go:build unix && !linux

package testserver

import "syscall"

// sysProcAttr has no parent-death signal to ask for here; Main's cleanup stops reqlite.
func sysProcAttr() *syscall.SysProcAttr { return nil }

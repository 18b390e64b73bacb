package testserver

import "syscall"

// sysProcAttr makes the kernel kill reqlite when the test binary dies, even by SIGKILL or a
// panic that skips Main's cleanup.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

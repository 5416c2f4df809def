package kubetest

import "syscall"

// The servers die with the test binary even if it is killed before cleanup.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

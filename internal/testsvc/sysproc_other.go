//go:build unix && !linux

package testsvc

import "syscall"

// sysProcAttr puts a child in its own process group, as user cred when not
// nil.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred}
}

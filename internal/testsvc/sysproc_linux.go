package testsvc

import "syscall"

// sysProcAttr puts a child in its own process group, as user cred when not
// nil, and has the kernel kill it if the test process dies first.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Credential: cred, Pdeathsig: syscall.SIGKILL}
}

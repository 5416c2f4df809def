package security

import (
	"net"
	"syscall"
	"unsafe"
)

// HasUnreadBytes reports whether c's socket holds received bytes nobody
// has read yet (FIONREAD). A gate uses it so a peer whose ClientHello has
// arrived counts as speaking before its handshake goroutine has run: under
// a churning flood, scheduling delay must not make a real peer look silent.
func HasUnreadBytes(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var n int32
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
	}); err != nil || errno != 0 {
		return false
	}
	return n > 0
}

//go:build !linux

package security

import "net"

// HasUnreadBytes is false where FIONREAD is not wired up: a gate then
// knows a peer spoke only once its handshake goroutine has read.
func HasUnreadBytes(net.Conn) bool { return false }

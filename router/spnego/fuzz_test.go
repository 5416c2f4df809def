package spnego

import (
	"testing"
	"time"
)

// FuzzAuthCookie: the hadoop.auth cookie comes from unauthenticated peers.
// verify never panics on any value, a cookie sign produced round-trips its
// user, and changing any byte of a signed cookie's fields (the user above
// all) makes verify refuse it.
func FuzzAuthCookie(f *testing.F) {
	a := &Auth{secret: []byte("0123456789abcdef0123456789abcdef"), validity: time.Hour, now: time.Now}
	f.Add(a.sign("alice", "alice@EXAMPLE.COM"), "alice", uint(3))
	f.Add("u=admin&p=x&t=kerberos&e=99999999999999&s=AAAA", "admin", uint(0))
	f.Add("&s=", "", uint(1))
	f.Fuzz(func(t *testing.T, cookie, user string, at uint) {
		_, _ = a.verify(cookie) // must not panic
		if user == "" {
			return
		}
		signed := a.sign(user, user+"@R")
		if u, ok := a.verify(signed); !ok || u != user {
			t.Fatalf("round trip of %q: %q %v", user, u, ok)
		}
		body := bodyLen(signed)
		if body == 0 {
			return
		}
		i := int(at % uint(body))
		tampered := []byte(signed)
		tampered[i] ^= 0x01
		if u, ok := a.verify(string(tampered)); ok && string(tampered) != signed {
			t.Fatalf("tampered cookie %q verified as %q", tampered, u)
		}
	})
}

// bodyLen is the length of the signed part of a cookie.
func bodyLen(c string) int {
	for i := 0; i+3 <= len(c); i++ {
		if c[i:i+3] == "&s=" {
			return i
		}
	}
	return 0
}

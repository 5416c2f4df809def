package simrm

import (
	"testing"
)

// FuzzParseIDs: the id parsers never panic, and what they accept prints
// back to a string that parses to the same id.
func FuzzParseIDs(f *testing.F) {
	for _, s := range []string{
		"application_1700000000000_0001", "appattempt_1700000000000_0001_000002",
		"container_1700000000000_0001_01_000003", "container_e17_1700000000000_0001_01_000003",
		"container_e_1_1_1_1", "application__", "container_e99999999_1_1_1_1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if a, err := ParseAppID(s); err == nil {
			if b, err := ParseAppID(a.String()); err != nil || b != a {
				t.Fatalf("app %q -> %v -> %v %v", s, a, b, err)
			}
		}
		if a, err := ParseAttemptID(s); err == nil {
			if b, err := ParseAttemptID(a.String()); err != nil || b != a {
				t.Fatalf("attempt %q -> %v -> %v %v", s, a, b, err)
			}
		}
		if c, err := ParseContainerID(s); err == nil {
			if c.ID < 0 {
				t.Fatalf("negative raw id from %q", s)
			}
			if d, err := ParseContainerID(c.String()); err != nil || d != c {
				t.Fatalf("container %q -> %v -> %v %v", s, c, d, err)
			}
		}
	})
}

// FuzzAMRMTokenIdentifier: the token check (the decoder behind SASL logins
// on the scheduler port) never panics, and only our own identifiers pass.
func FuzzAMRMTokenIdentifier(f *testing.F) {
	s := newSecrets([]byte("0123456789abcdefghij"), 1)
	good := s.amrmToken(AttemptID{App: AppID{ClusterTimestamp: 1, ID: 2}, Attempt: 1}, "")
	f.Add(good.Identifier)
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0x02, 0x08})
	f.Fuzz(func(t *testing.T, ident []byte) {
		id, pw, err := s.checkAMRM(ident)
		if err != nil {
			return
		}
		if string(pw) != string(s.sign(ident)) {
			t.Fatal("password is not the HMAC of the identifier")
		}
		if id.String() == "" {
			t.Fatal("empty attempt id")
		}
	})
}

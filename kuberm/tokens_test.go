package kuberm

import (
	"bytes"
	"testing"
)

// NM and container tokens have a key of their own, derived from the
// AMRMToken master key: a password of one kind never verifies a token of
// another, even for the same identifier bytes.
func TestTokenKeysSeparate(t *testing.T) {
	r := unitRM(t)
	r.masterKey = bytes.Repeat([]byte{7}, masterKeyBytes)
	id := []byte("the same identifier bytes")
	if bytes.Equal(r.sign(id), r.signNM(id)) {
		t.Fatal("an AMRMToken password equals the NM-token password of the same identifier")
	}
	other := unitRM(t)
	other.masterKey = bytes.Repeat([]byte{8}, masterKeyBytes)
	if bytes.Equal(r.signNM(id), other.signNM(id)) {
		t.Fatal("the NM key does not depend on the master key")
	}
}

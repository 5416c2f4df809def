package krb5sasl

import (
	"fmt"
	"testing"
)

// BenchmarkWrapUnwrap: the per-packet cost of auth-int and auth-conf
// (AES256-CTS-HMAC-SHA1-96), one wrap by the client and one unwrap by the
// server.
func BenchmarkWrapUnwrap(b *testing.B) {
	key := typesKey([]byte("0123456789abcdef0123456789abcdef"))
	for _, conf := range []bool{false, true} {
		for _, size := range []int{256, 4 << 10, 64 << 10} {
			name := fmt.Sprintf("auth-int/%dB", size)
			if conf {
				name = fmt.Sprintf("auth-conf/%dB", size)
			}
			b.Run(name, func(b *testing.B) {
				cli, _ := newContext(key, false, false, 1, 1)
				srv, _ := newContext(key, true, false, 1, 1)
				msg := make([]byte, size)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					tok, err := cli.wrap(msg, conf)
					if err != nil {
						b.Fatal(err)
					}
					if _, _, err := srv.unwrap(tok); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

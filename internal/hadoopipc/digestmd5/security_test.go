package digestmd5

import (
	"bytes"
	"errors"
	"sync"
	"testing"
)

func layers(t testing.TB, qop QOP, c Cipher) (client, server *SecurityLayer) {
	scfg, ccfg := hadoopConfigs([]QOP{qop}, nil)
	if c != "" {
		ccfg.Ciphers = []Cipher{c}
	}
	s, cl := exchange(t, scfg, ccfg)
	return cl.SecurityLayer(), s.SecurityLayer()
}

var layerCases = []struct {
	name   string
	qop    QOP
	cipher Cipher
}{
	{"auth-int", QOPAuthInt, ""},
	{"3des", QOPAuthConf, Cipher3DES},
	{"des", QOPAuthConf, CipherDES},
	{"rc4", QOPAuthConf, CipherRC4},
	{"rc4-40", QOPAuthConf, CipherRC4_40},
}

func TestUnwrapRejects(t *testing.T) {
	msg := []byte("a message of some length")
	tests := []struct {
		name string
		// attack gets the wrapped messages w0, w1 (sent in that order) and
		// returns what the receiver sees.
		attack func(w0, w1 []byte) [][]byte
		err    error
	}{
		{"tampered MAC", func(w0, _ []byte) [][]byte { return [][]byte{flip(w0, len(w0)-7)} }, ErrIntegrity},
		{"tampered body", func(w0, _ []byte) [][]byte { return [][]byte{flip(w0, 0)} }, ErrIntegrity},
		{"replayed message", func(w0, _ []byte) [][]byte { return [][]byte{w0, w0} }, nil},
		{"dropped message", func(_, w1 []byte) [][]byte { return [][]byte{w1} }, nil},
		{"wrong message type", func(w0, _ []byte) [][]byte { return [][]byte{flip(w0, len(w0)-5)} }, ErrSequence},
		{"wrong sequence number", func(w0, _ []byte) [][]byte { return [][]byte{flip(w0, len(w0)-1)} }, nil},
		{"truncated", func(w0, _ []byte) [][]byte { return [][]byte{w0[:15]} }, ErrMalformed},
	}
	for _, lc := range layerCases {
		for _, tc := range tests {
			t.Run(lc.name+"/"+tc.name, func(t *testing.T) {
				cl, sl := layers(t, lc.qop, lc.cipher)
				w0, _ := cl.Wrap(msg)
				w1, _ := cl.Wrap(msg)
				in := tc.attack(w0, w1)
				var err error
				for _, w := range in {
					if _, err = sl.Unwrap(w); err != nil {
						break
					}
				}
				if err == nil {
					t.Fatal("attack accepted")
				}
				want := tc.err
				if want == nil {
					// For integrity the MAC covers the sequence number, so a
					// replayed or renumbered message is either a MAC failure
					// or a sequence failure; with a cipher, the keystream or
					// CBC chain is also off. Any of these is a rejection.
					if !errors.Is(err, ErrSequence) && !errors.Is(err, ErrIntegrity) && !errors.Is(err, ErrMalformed) {
						t.Fatalf("err = %v", err)
					}
					return
				}
				if !errors.Is(err, want) {
					t.Fatalf("err = %v, want %v", err, want)
				}
			})
		}
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 0x01
	return c
}

func TestUnwrapIntegrityReplayIsSequenceError(t *testing.T) {
	cl, sl := layers(t, QOPAuthInt, "")
	w0, _ := cl.Wrap([]byte("x"))
	if _, err := sl.Unwrap(w0); err != nil {
		t.Fatal(err)
	}
	if _, err := sl.Unwrap(w0); !errors.Is(err, ErrSequence) {
		t.Fatalf("replay: err = %v, want ErrSequence", err)
	}
	// The layer still accepts the genuine next message.
	w1, _ := cl.Wrap([]byte("y"))
	if got, err := sl.Unwrap(w1); err != nil || string(got) != "y" {
		t.Fatalf("next message: %q, %v", got, err)
	}
}

func TestWrapEmpty(t *testing.T) {
	for _, lc := range layerCases {
		cl, sl := layers(t, lc.qop, lc.cipher)
		if w, err := cl.Wrap(nil); err != nil || len(w) != 0 {
			t.Fatalf("%s: Wrap(nil) = %x, %v", lc.name, w, err)
		}
		if m, err := sl.Unwrap(nil); err != nil || len(m) != 0 {
			t.Fatalf("%s: Unwrap(nil) = %x, %v", lc.name, m, err)
		}
		// Empty wraps consume no sequence number.
		w, _ := cl.Wrap([]byte("z"))
		if m, err := sl.Unwrap(w); err != nil || string(m) != "z" {
			t.Fatalf("%s: %q, %v", lc.name, m, err)
		}
	}
}

func TestSecurityLayerConcurrentUse(t *testing.T) {
	cl, sl := layers(t, QOPAuthConf, CipherRC4)
	// One goroutine per direction, as a connection's reader and writer.
	var wg sync.WaitGroup
	pipe := func(from, to *SecurityLayer) {
		defer wg.Done()
		for i := 0; i < 200; i++ {
			msg := bytes.Repeat([]byte{byte(i)}, i)
			w, err := from.Wrap(msg)
			if err != nil {
				t.Error(err)
				return
			}
			got, err := to.Unwrap(w)
			if err != nil || !bytes.Equal(got, msg) {
				t.Errorf("message %d: %v", i, err)
				return
			}
		}
	}
	wg.Add(2)
	go pipe(cl, sl)
	go pipe(sl, cl)
	wg.Wait()
}

func TestMaxWrapSize(t *testing.T) {
	cl, sl := layers(t, QOPAuthInt, "")
	if cl.MaxWrapSize() != DefaultMaxBuf-16 || sl.MaxWrapSize() != DefaultMaxBuf-16 {
		t.Fatalf("MaxWrapSize client=%d server=%d", cl.MaxWrapSize(), sl.MaxWrapSize())
	}
	cl, _ = layers(t, QOPAuthConf, Cipher3DES)
	if cl.MaxWrapSize() != DefaultMaxBuf-26 || cl.Cipher() != Cipher3DES || cl.QOP() != QOPAuthConf {
		t.Fatalf("MaxWrapSize=%d cipher=%q qop=%q", cl.MaxWrapSize(), cl.Cipher(), cl.QOP())
	}
}

// TestExpandDESKey: 56 bits spread 7 per byte with odd parity in bit 0.
func TestExpandDESKey(t *testing.T) {
	got := expandDESKey([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	// Each byte: seven 1 bits, so the parity bit stays 0 (odd parity).
	if got != [8]byte{0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe, 0xfe} {
		t.Fatalf("got %x", got)
	}
	got = expandDESKey([]byte{0, 0, 0, 0, 0, 0, 0})
	if got != [8]byte{1, 1, 1, 1, 1, 1, 1, 1} {
		t.Fatalf("got %x", got)
	}
	got = expandDESKey([]byte{0x80, 0, 0, 0, 0, 0, 0x01})
	if got[0] != 0x80 || got[7] != 0x02 {
		// top bit lands in byte 0 bit 7 (0x80, parity 1 -> no parity bit);
		// bottom bit in byte 7 bit 1 (0x02, parity bit 0).
		t.Fatalf("got %x", got)
	}
}

func BenchmarkExchange(b *testing.B) {
	scfg, ccfg := hadoopConfigs(nil, nil)
	b.ReportAllocs()
	for b.Loop() {
		exchange(b, scfg, ccfg)
	}
}

func BenchmarkWrapUnwrap(b *testing.B) {
	msg := make([]byte, 4096)
	for _, lc := range layerCases {
		b.Run(lc.name, func(b *testing.B) {
			cl, sl := layers(b, lc.qop, lc.cipher)
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			for b.Loop() {
				w, _ := cl.Wrap(msg)
				if _, err := sl.Unwrap(w); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

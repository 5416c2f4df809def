package security

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// TestCheckMode: TLS files mean TLS; plaintext needs the explicit flag and
// logs a warning; neither is ErrPlaintext naming both ways out.
func TestCheckMode(t *testing.T) {
	files := TLSInfo{CertFile: "c", KeyFile: "k", CAFile: "a"}
	cases := []struct {
		name     string
		info     TLSInfo
		insecure bool
		wantTLS  bool
		wantErr  error  // nil: no error
		errHas   string // substring of a non-sentinel error
		warns    bool
	}{
		{"tls", files, false, true, nil, "", false},
		{"explicit insecure", TLSInfo{}, true, false, nil, "", true},
		{"neither refuses", TLSInfo{}, false, false, ErrPlaintext, "", false},
		{"both", files, true, false, nil, "exclusive", false},
		{"partial files", TLSInfo{CertFile: "c"}, false, false, nil, "key_file", false},
	}
	for _, m := range []Mode{ServerMode, ClientMode} {
		for _, tc := range cases {
			t.Run(m.Insecure+"/"+tc.name, func(t *testing.T) {
				var logs bytes.Buffer
				useTLS, err := CheckMode(tc.info, tc.insecure, m, slog.New(slog.NewTextHandler(&logs, nil)))
				switch {
				case tc.wantErr != nil:
					if !errors.Is(err, tc.wantErr) {
						t.Fatalf("err = %v, want %v", err, tc.wantErr)
					}
					for _, way := range []string{m.TLSFlags, m.Insecure} {
						if !strings.Contains(err.Error(), way) {
							t.Errorf("error %q does not name %q", err, way)
						}
					}
				case tc.errHas != "":
					if err == nil || !strings.Contains(err.Error(), tc.errHas) {
						t.Fatalf("err = %v, want %q", err, tc.errHas)
					}
				case err != nil:
					t.Fatal(err)
				}
				if useTLS != tc.wantTLS {
					t.Errorf("useTLS = %v, want %v", useTLS, tc.wantTLS)
				}
				if warned := strings.Contains(logs.String(), "PLAINTEXT"); warned != tc.warns {
					t.Errorf("warning logged = %v, want %v (%q)", warned, tc.warns, logs.String())
				}
			})
		}
	}
}

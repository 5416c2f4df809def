package digestmd5

import (
	"bytes"
	"errors"
	"reflect"
	"runtime"
	"testing"
)

func TestParseDirectives(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []directive
		err  error
	}{
		{name: "empty", in: "", want: nil},
		{name: "only separators and space", in: " , ,\t,\r\n", want: nil},
		{name: "bare", in: "qop=auth", want: []directive{{name: "qop", value: "auth"}}},
		{name: "quoted", in: `realm="default"`, want: []directive{{name: "realm", value: "default", quoted: true}}},
		{name: "java challenge", in: `realm="default",nonce="abc+/=",qop="auth",charset=utf-8,algorithm=md5-sess`,
			want: []directive{
				{"realm", "default", true}, {"nonce", "abc+/=", true}, {"qop", "auth", true},
				{"charset", "utf-8", false}, {"algorithm", "md5-sess", false},
			}},
		{name: "names are case-insensitive", in: `ReAlM="X"`, want: []directive{{"realm", "X", true}}},
		{name: "comma inside quotes", in: `qop="auth,auth-int, auth-conf"`, want: []directive{{"qop", "auth,auth-int, auth-conf", true}}},
		{name: "escapes", in: `username="a\"b\\c\d"`, want: []directive{{"username", `a"b\cd`, true}}},
		{name: "whitespace everywhere", in: " a = \"1\" ,\tb=2 , ", want: []directive{{"a", "1", true}, {"b", "2", false}}},
		{name: "null elements", in: ",,a=1,,,b=2,", want: []directive{{"a", "1", false}, {"b", "2", false}}},
		{name: "empty quoted value", in: `authzid=""`, want: []directive{{"authzid", "", true}}},
		{name: "duplicates are kept for the caller", in: "a=1,a=2", want: []directive{{"a", "1", false}, {"a", "2", false}}},
		{name: "utf-8 in quotes", in: `username="jürgen"`, want: []directive{{"username", "jürgen", true}}},
		{name: "unterminated quote", in: `realm="abc`, err: ErrMalformed},
		{name: "unterminated escape", in: `realm="abc\`, err: ErrMalformed},
		{name: "missing equals", in: `realm`, err: ErrMalformed},
		{name: "missing value", in: `realm=`, err: ErrMalformed},
		{name: "missing value before comma", in: `realm=,qop=auth`, err: ErrMalformed},
		{name: "empty name", in: `="x"`, err: ErrMalformed},
		{name: "junk after quoted value", in: `realm="a"b`, err: ErrMalformed},
		{name: "space inside bare value", in: `qop=au th`, err: ErrMalformed},
		{name: "quote inside bare value", in: `qop=au"th"`, err: ErrMalformed},
		{name: "separator in name", in: `re/alm=x`, err: ErrMalformed},
		{name: "control byte in name", in: "re\x00alm=x", err: ErrMalformed},
		{name: "high byte in name", in: "re\xffalm=x", err: ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseDirectives([]byte(tc.in))
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("parseDirectives(%q) error = %v, want %v", tc.in, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseDirectives(%q): %v", tc.in, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("parseDirectives(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseDirectivesTooMany(t *testing.T) {
	var b []byte
	for i := 0; i <= maxDirectives; i++ {
		b = append(b, "a=1,"...)
	}
	if _, err := parseDirectives(b); !errors.Is(err, ErrMalformed) {
		t.Fatalf("%d directives: err = %v, want ErrMalformed", maxDirectives+1, err)
	}
}

func TestFormatDirectivesRoundTrip(t *testing.T) {
	in := []directive{{"username", "a\"b\\c\x01", true}, {"qop", "auth", false}, {"x", "", false}, {"y", "a b", false}}
	got, err := parseDirectives(formatDirectives(in))
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		if got[i].name != in[i].name || got[i].value != in[i].value {
			t.Fatalf("round trip %d: got %+v, want %+v", i, got[i], in[i])
		}
	}
}

// TestParseBoundedAllocation: the worst inputs of the maximum size (every
// value escaped, or the maximum number of directives) allocate a small
// multiple of the input.
func TestParseBoundedAllocation(t *testing.T) {
	escaped := append([]byte(`a="`), bytes.Repeat([]byte(`\\x`), (MaxResponseSize-5)/3)...)
	escaped = append(escaped, '"')
	var many []byte
	for len(many) < MaxResponseSize-8 {
		many = append(many, `k="\\",`...)
	}
	for name, in := range map[string][]byte{"escaped": escaped, "many": many} {
		if len(in) > MaxResponseSize {
			t.Fatalf("%s: test input of %d bytes", name, len(in))
		}
		const runs = 50
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := 0; i < runs; i++ {
			parseDirectives(in)
		}
		runtime.ReadMemStats(&after)
		if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 16*MaxResponseSize {
			t.Fatalf("%s: %d bytes allocated per parse of %d bytes", name, per, len(in))
		}
	}
}

package fetchwire

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func goodRequest() Request {
	return Request{URL: "hdfs://nn.example.com:8020/user/alice/a%20b.jar", User: "alice", Dest: "/local/filecache/1_tmp/a b.jar",
		Size: 12, Timestamp: 1700000000123, MaxBytes: 8 << 30, MaxEntries: 1 << 20, Timeout: 30 * time.Minute}
}

// TestRequestRoundTrip: the launcher's command line parses back to the
// same request, with and without a size.
func TestRequestRoundTrip(t *testing.T) {
	for _, r := range []Request{goodRequest(), func() Request { r := goodRequest(); r.Size = 0; return r }()} {
		got, err := ParseArgs(r.Args(), nil)
		if err != nil || got != r {
			t.Fatalf("ParseArgs(%q) = %+v, %v; want %+v", r.Args(), got, err, r)
		}
	}
}

// TestRequestRefused: a request the fetcher cannot do as asked is refused
// before any connection, with ErrBadRequest.
func TestRequestRefused(t *testing.T) {
	for name, mut := range map[string]func(*Request){
		"not hdfs":       func(r *Request) { r.URL = "s3a://bucket/a.jar" },
		"no host":        func(r *Request) { r.URL = "hdfs:///a.jar" },
		"relative":       func(r *Request) { r.URL = "hdfs://nn:8020" },
		"dot-dot":        func(r *Request) { r.URL = "hdfs://nn:8020/a/../b" },
		"user info":      func(r *Request) { r.URL = "hdfs://bob@nn:8020/a" },
		"query":          func(r *Request) { r.URL = "hdfs://nn:8020/a?x=1" },
		"no user":        func(r *Request) { r.User = "" },
		"no dest":        func(r *Request) { r.Dest = "" },
		"no byte bound":  func(r *Request) { r.MaxBytes = 0 },
		"no entry bound": func(r *Request) { r.MaxEntries = 0 },
		"no timeout":     func(r *Request) { r.Timeout = 0 },
		"negative size":  func(r *Request) { r.Size = -1 },
	} {
		t.Run(name, func(t *testing.T) {
			r := goodRequest()
			mut(&r)
			if err := r.Check(); !errors.Is(err, ErrBadRequest) {
				t.Fatalf("Check accepted %+v: %v", r, err)
			}
		})
	}
	if _, err := ParseArgs([]string{"--user", "a", "hdfs://nn/a"}, nil); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("one argument: %v", err)
	}
	unsized := goodRequest()
	unsized.Size = 0
	if _, err := ParseArgs(append([]string{"--size", "-1"}, unsized.Args()...), nil); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("--size -1: %v", err)
	}
	if _, err := ParseArgs([]string{"--bogus", "1"}, nil); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("unknown flag: %v", err)
	}
}

// TestReportRoundTrip: every kind of report decodes to itself; the exit
// status follows the report.
func TestReportRoundTrip(t *testing.T) {
	for _, c := range []struct {
		r    Report
		exit int
	}{
		{Report{Status: StatusOK, Bytes: 5, Files: 2, Dir: true, ModTime: 17}, ExitOK},
		{Report{Status: StatusOK}, ExitOK},
		{Report{Status: StatusChanged, What: WhatTimestamp, Expected: 1, Found: 2}, ExitChanged},
		{Report{Status: StatusChanged, What: WhatSize, Expected: 3}, ExitChanged},
		{Report{Status: StatusFailed, Kind: KindUnreachable, Message: "no NameNode"}, ExitFailed},
		{Report{Status: StatusFailed, Kind: KindUsage, Message: "bad"}, ExitUsage},
	} {
		got, err := DecodeReport(c.r.Encode())
		if err != nil || got != c.r || c.r.ExitCode() != c.exit {
			t.Errorf("DecodeReport(%s) = %+v, %v (exit %d); want %+v, exit %d", c.r.Encode(), got, err, c.r.ExitCode(), c.r, c.exit)
		}
	}
	long := Report{Status: StatusFailed, Kind: KindIO, Message: strings.Repeat("é", MaxMessageBytes) + "\xff"}
	got, err := DecodeReport(long.Encode())
	if err != nil || len(got.Message) > MaxMessageBytes || !utf8.ValidString(got.Message) {
		t.Fatalf("a long message: %d bytes, %v", len(got.Message), err)
	}
}

// TestReportRefused: the launcher takes nothing but one well-formed report.
func TestReportRefused(t *testing.T) {
	for name, s := range map[string]string{
		"empty":             ``,
		"not json":          `panic: x`,
		"two values":        `{"status":"ok"} {"status":"ok"}`,
		"unknown field":     `{"status":"ok","extra":1}`,
		"unknown status":    `{"status":"maybe"}`,
		"unknown kind":      `{"status":"failed","kind":"weird","message":"m"}`,
		"failed no message": `{"status":"failed","kind":"io"}`,
		"changed what":      `{"status":"changed","what":"owner"}`,
		"ok with kind":      `{"status":"ok","kind":"io"}`,
		"negative bytes":    `{"status":"ok","bytes":-1}`,
		"failed with bytes": `{"status":"failed","kind":"io","message":"m","bytes":3}`,
		"too long":          `{"status":"ok"}` + strings.Repeat(" ", MaxReportBytes),
	} {
		if r, err := DecodeReport([]byte(s)); !errors.Is(err, ErrBadReport) {
			t.Errorf("%s: DecodeReport = %+v, %v; want ErrBadReport", name, r, err)
		}
	}
}

// FuzzDecodeReport: the fetcher's stdout is a process's output; any bytes
// decode to a report that keeps the rules and encodes back to itself, or
// fail with ErrBadReport; never a panic.
func FuzzDecodeReport(f *testing.F) {
	f.Add([]byte(`{"status":"ok","bytes":5,"files":1,"mtime":3}`))
	f.Add([]byte(`{"status":"changed","what":"timestamp","expected":1,"found":2}`))
	f.Add([]byte(`{"status":"failed","kind":"not_found","message":"File does not exist: /a"}` + "\n"))
	f.Add([]byte(`{"status":"failed","kind":"io","message":"\ud800"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeReport(b)
		if err != nil {
			if !errors.Is(err, ErrBadReport) {
				t.Fatalf("error %v does not wrap ErrBadReport", err)
			}
			return
		}
		if len(r.Message) > MaxMessageBytes || r.Bytes < 0 || r.Files < 0 {
			t.Fatalf("a report past the rules: %+v", r)
		}
		again, err := DecodeReport(r.Encode())
		if err != nil || again != r {
			t.Fatalf("re-encoding %+v gave %+v, %v", r, again, err)
		}
	})
}

// FuzzParseArgs: any command line parses to a request that passes Check
// and survives Args, or fails with ErrBadRequest.
func FuzzParseArgs(f *testing.F) {
	f.Add(strings.Join(goodRequest().Args(), "\x00"))
	f.Add("--user\x00a\x00--\x00hdfs://nn/a\x00/x")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseArgs(strings.Split(s, "\x00"), nil)
		if err != nil {
			if !errors.Is(err, ErrBadRequest) {
				t.Fatalf("error %v does not wrap ErrBadRequest", err)
			}
			return
		}
		if err := r.Check(); err != nil {
			t.Fatalf("parsed %+v fails Check: %v", r, err)
		}
		again, err := ParseArgs(r.Args(), nil)
		if err != nil || again != r {
			t.Fatalf("round trip of %+v gave %+v, %v", r, again, err)
		}
	})
}

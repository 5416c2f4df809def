// Package fetchwire is the contract between the launcher (kuberm/launch,
// inside the yarnfed binary) and yarnfed-hdfs-fetch, the small second binary
// that fetches hdfs:// resources. The two are separate binaries because the
// HDFS client (colinmarc/hdfs) registers its own hadoop.common protos, which
// conflict with internal/yarnpb's at init; so this package imports neither.
//
// The launcher runs
//
//	yarnfed-hdfs-fetch --user U --timestamp MS [--size N] --max-bytes B \
//	    --max-entries E --timeout D hdfs://nn[:port]/path DEST
//
// and reads one JSON Report from the fetcher's stdout. The exit status
// says the same in brief (ExitOK, ExitFailed, ExitUsage, ExitChanged), for
// a human running the fetcher by hand.
package fetchwire

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// BinaryName is the fetcher's file name, in the image beside /yarnfed and in
// the pod's install directory beside the launcher.
const BinaryName = "yarnfed-hdfs-fetch"

// Exit statuses of the fetcher.
const (
	ExitOK      = 0
	ExitFailed  = 1 // Report.Status StatusFailed
	ExitUsage   = 2 // bad arguments (Report.Kind KindUsage)
	ExitChanged = 3 // Report.Status StatusChanged: FSDownload's refusal
)

// Report statuses.
const (
	StatusOK      = "ok"
	StatusChanged = "changed" // the source is not what the launch context recorded
	StatusFailed  = "failed"
)

// Failure kinds (Report.Kind when Status is StatusFailed).
const (
	KindUsage       = "usage"       // the request itself is wrong
	KindUnreachable = "unreachable" // no NameNode (or DataNode) answered
	KindNotFound    = "not_found"   // FileNotFoundException
	KindPermission  = "permission"  // AccessControlException, or the NameNode refused our authentication
	KindTooLarge    = "too_large"   // more bytes or entries than allowed
	KindTimeout     = "timeout"     // --timeout passed
	KindUnsupported = "unsupported" // a symbolic link or special file on the source
	KindIO          = "io"          // anything else: a read or local write failed
)

// What changed (Report.What when Status is StatusChanged).
const (
	WhatTimestamp = "timestamp"
	WhatSize      = "size"
)

// Bounds of the wire itself.
const (
	// MaxReportBytes bounds what the launcher reads from the fetcher's stdout.
	MaxReportBytes = 64 << 10
	// MaxMessageBytes bounds a report's message.
	MaxMessageBytes = 8 << 10
	maxArgBytes     = 64 << 10
)

// ErrBadRequest is a request the fetcher refuses; ErrBadReport a report the
// launcher refuses.
var (
	ErrBadRequest = errors.New("bad fetch request")
	ErrBadReport  = errors.New("bad fetch report")
)

// Request is one fetch.
type Request struct {
	URL        string // hdfs://host[:port]/absolute/path (no user info, query or fragment)
	User       string // the SIMPLE user the NameNode sees
	Dest       string // the local path to create (a file, or a directory for a directory)
	Size       int64  // the recorded size; <= 0: not compared (FSDownload never compares it)
	Timestamp  int64  // the recorded modification time, ms since the epoch; always compared
	MaxBytes   int64  // bytes written in all
	MaxEntries int    // files and directories of a directory resource
	Timeout    time.Duration
}

// Args is the request as the fetcher's command line (without argv[0]).
func (r Request) Args() []string {
	a := []string{"--user", r.User, "--timestamp", strconv.FormatInt(r.Timestamp, 10)}
	if r.Size > 0 {
		a = append(a, "--size", strconv.FormatInt(r.Size, 10))
	}
	return append(a, "--max-bytes", strconv.FormatInt(r.MaxBytes, 10), "--max-entries", strconv.Itoa(r.MaxEntries),
		"--timeout", r.Timeout.String(), "--", r.URL, r.Dest)
}

// ParseArgs reads a command line written by Args (flags in any order) and
// checks it; usage, if not nil, receives the flags' help on -h.
func ParseArgs(args []string, usage io.Writer) (Request, error) {
	var r Request
	for _, a := range args {
		if len(a) > maxArgBytes {
			return r, fmt.Errorf("%w: an argument of %d bytes", ErrBadRequest, len(a))
		}
	}
	fs := flag.NewFlagSet(BinaryName, flag.ContinueOnError)
	if usage == nil {
		usage = io.Discard
	}
	fs.SetOutput(usage)
	fs.StringVar(&r.User, "user", "", "the user the NameNode sees (SIMPLE authentication)")
	fs.Int64Var(&r.Timestamp, "timestamp", 0, "the modification time the launch context recorded (ms since the epoch)")
	fs.Int64Var(&r.Size, "size", 0, "the size the launch context recorded (0: not compared)")
	fs.Int64Var(&r.MaxBytes, "max-bytes", 0, "fail past this many bytes in all")
	fs.IntVar(&r.MaxEntries, "max-entries", 0, "fail past this many files and directories")
	fs.DurationVar(&r.Timeout, "timeout", 0, "fail after this long")
	fs.Usage = func() {
		fmt.Fprintf(usage, "usage: %s [flags] hdfs://namenode[:port]/path DEST\n", BinaryName)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return r, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	if fs.NArg() != 2 {
		return r, fmt.Errorf("%w: want a source URL and a destination, got %d arguments", ErrBadRequest, fs.NArg())
	}
	r.URL, r.Dest = fs.Arg(0), fs.Arg(1)
	return r, r.Check()
}

// Check validates the request.
func (r Request) Check() error {
	if _, _, err := SplitURL(r.URL); err != nil {
		return err
	}
	switch {
	case r.User == "" || strings.ContainsAny(r.User, "\x00\n/"):
		return fmt.Errorf("%w: --user %q: want a user name", ErrBadRequest, r.User)
	case r.Dest == "" || strings.ContainsRune(r.Dest, 0):
		return fmt.Errorf("%w: destination %q", ErrBadRequest, r.Dest)
	case r.MaxBytes <= 0:
		return fmt.Errorf("%w: --max-bytes %d: want > 0", ErrBadRequest, r.MaxBytes)
	case r.MaxEntries <= 0:
		return fmt.Errorf("%w: --max-entries %d: want > 0", ErrBadRequest, r.MaxEntries)
	case r.Timeout <= 0:
		return fmt.Errorf("%w: --timeout %v: want > 0", ErrBadRequest, r.Timeout)
	case r.Size < 0:
		return fmt.Errorf("%w: --size %d", ErrBadRequest, r.Size)
	}
	return nil
}

// SplitURL returns an hdfs:// URL's authority (host[:port], or an HA
// nameservice) and absolute, clean path.
func SplitURL(s string) (authority, file string, err error) {
	u, perr := url.Parse(s)
	switch {
	case perr != nil:
		return "", "", fmt.Errorf("%w: %v", ErrBadRequest, perr)
	case u.Scheme != "hdfs":
		return "", "", fmt.Errorf("%w: %q is not an hdfs:// URL", ErrBadRequest, s)
	case u.Host == "":
		return "", "", fmt.Errorf("%w: %q names no NameNode (hdfs://host:port/path)", ErrBadRequest, s)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return "", "", fmt.Errorf("%w: %q: user info, query and fragment are not taken", ErrBadRequest, s)
	case !strings.HasPrefix(u.Path, "/") || strings.ContainsRune(u.Path, 0):
		return "", "", fmt.Errorf("%w: %q: the path must be absolute", ErrBadRequest, s)
	}
	for _, el := range strings.Split(u.Path[1:], "/") {
		if el == "." || el == ".." {
			return "", "", fmt.Errorf("%w: %q: the path has a %q element", ErrBadRequest, s, el)
		}
	}
	return u.Host, u.Path, nil
}

// Report is what the fetcher prints: one JSON object.
type Report struct {
	Status string `json:"status"`
	// Failed: the kind and a message in HDFS's terms (the exception or
	// the network error).
	Kind    string `json:"kind,omitempty"`
	Message string `json:"message,omitempty"`
	// Changed: what differs, as recorded and as found (ms for a timestamp).
	What     string `json:"what,omitempty"`
	Expected int64  `json:"expected,omitempty"`
	Found    int64  `json:"found,omitempty"`
	// OK: what was written.
	Bytes   int64 `json:"bytes,omitempty"`
	Files   int   `json:"files,omitempty"` // regular files written
	Dir     bool  `json:"dir,omitempty"`   // the source was a directory
	ModTime int64 `json:"mtime,omitempty"` // the source's modification time (ms)
}

// ExitCode is the fetcher's exit status for the report.
func (r Report) ExitCode() int {
	switch {
	case r.Status == StatusOK:
		return ExitOK
	case r.Status == StatusChanged:
		return ExitChanged
	case r.Kind == KindUsage:
		return ExitUsage
	}
	return ExitFailed
}

// Encode is the report as the fetcher prints it (one line).
func (r Report) Encode() []byte {
	r.Message = truncate(strings.ToValidUTF8(r.Message, "?"), MaxMessageBytes)
	b, _ := json.Marshal(r) // only strings, ints and a bool: cannot fail
	return append(b, '\n')
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xc0 == 0x80 {
		n--
	}
	return s[:n]
}

var kinds = map[string]bool{KindUsage: true, KindUnreachable: true, KindNotFound: true, KindPermission: true,
	KindTooLarge: true, KindTimeout: true, KindUnsupported: true, KindIO: true}

// DecodeReport reads a report printed by the fetcher and checks it: exactly
// one JSON object, no unknown field, a known status with the fields it
// needs, bounded, nothing negative.
func DecodeReport(b []byte) (Report, error) {
	var r Report
	if len(b) > MaxReportBytes {
		return r, fmt.Errorf("%w: %d bytes, at most %d", ErrBadReport, len(b), MaxReportBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Report{}, fmt.Errorf("%w: %v", ErrBadReport, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Report{}, fmt.Errorf("%w: more than one JSON value", ErrBadReport)
	}
	bad := func(why string) (Report, error) { return Report{}, fmt.Errorf("%w: %s", ErrBadReport, why) }
	if len(r.Message) > MaxMessageBytes {
		return bad("message too long")
	}
	if r.Bytes < 0 || r.Files < 0 || r.Expected < 0 || r.Found < 0 || r.ModTime < 0 {
		return bad("a negative count")
	}
	switch r.Status {
	case StatusOK:
		if r.Kind != "" || r.What != "" || r.Message != "" {
			return bad("an ok report with failure fields")
		}
	case StatusChanged:
		if r.What != WhatTimestamp && r.What != WhatSize {
			return bad(fmt.Sprintf("changed %q", r.What))
		}
		if r.Kind != "" || r.Bytes != 0 || r.Files != 0 {
			return bad("a changed report with other fields")
		}
	case StatusFailed:
		if !kinds[r.Kind] {
			return bad(fmt.Sprintf("failure kind %q", r.Kind))
		}
		if r.Message == "" {
			return bad("a failure without a message")
		}
		if r.What != "" || r.Bytes != 0 || r.Files != 0 {
			return bad("a failure with other fields")
		}
	default:
		return bad(fmt.Sprintf("status %q", r.Status))
	}
	return r, nil
}

// Package config is the one configuration mechanism of every role:
// defaults, then a JSON file, then flags, then Validate (Loader), with one
// duration type (Duration) in files and on the command line.
package config

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Duration is a time.Duration written as a Go duration string ("500ms",
// "1m30s") in JSON config files and on the command line. *Duration is a
// pflag.Value, so a config field binds to a flag as it is.
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON accepts a Go duration string only: a bare number would be
// ambiguous (seconds? nanoseconds?), so it is an error that says so.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"10s\": %w", err)
	}
	return d.Set(s)
}

// String formats the duration (pflag.Value).
func (d *Duration) String() string { return time.Duration(*d).String() }

// Set parses a Go duration string (pflag.Value).
func (d *Duration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Type names the flag type in help output (pflag.Value).
func (d *Duration) Type() string { return "duration" }

// List is a comma-separated list flag that behaves as a string flag: each
// use replaces the list (pflag's StringSlice appends on a repeated flag).
// In a JSON file it is a list of strings, or one comma-separated string.
// Blank items are dropped.
type List []string

// Set replaces the list with the comma-separated items of s (pflag.Value).
func (l *List) Set(s string) error {
	var out List
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	*l = out
	return nil
}

// String joins the list with commas (pflag.Value).
func (l *List) String() string { return strings.Join(*l, ",") }

// Type names the flag type in help output (pflag.Value).
func (l *List) Type() string { return "list" }

// UnmarshalJSON accepts ["a", "b"] or "a,b".
func (l *List) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		return l.Set(s)
	}
	var items []string
	if err := json.Unmarshal(b, &items); err != nil {
		return fmt.Errorf("want a list of strings or one comma-separated string: %w", err)
	}
	*l = nil
	for _, item := range items {
		if item = strings.TrimSpace(item); item != "" {
			*l = append(*l, item)
		}
	}
	return nil
}

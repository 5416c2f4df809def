// Package authtolocal maps Kerberos principals to short user names the way
// Hadoop's hadoop.security.auth_to_local does (KerberosName with the
// default "hadoop" mechanism): rules are tried in order, the first that
// yields a name wins, and a principal no rule maps is refused.
//
// Rules:
//
//	DEFAULT                          principal in the default realm -> its first component
//	RULE:[n:fmt](regex)s/from/to/g/L n components; fmt uses $0 (realm), $1, $2...;
//	                                 the formatted name must match regex entirely;
//	                                 optional sed-style substitution (g: all matches),
//	                                 optional /L: lower-case the result
//
// Regular expressions are Go's (RE2), which agrees with Java's for the
// patterns auth_to_local rules use; back-references are not supported.
package authtolocal

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ErrNoMatchingRule is returned when no rule maps a principal (Hadoop's
// KerberosName$NoMatchingRule), or a rule maps it to a name with '@' or '/'.
var ErrNoMatchingRule = errors.New("no auth_to_local rule applied")

// MaxRulesBytes bounds the rules text (it comes from configuration, but the
// parser should not depend on that).
const MaxRulesBytes = 64 << 10

type rule struct {
	isDefault bool
	n         int
	format    string
	match     *regexp.Regexp // nil: always
	from      *regexp.Regexp // nil: no substitution
	to        string
	global    bool
	lower     bool
	text      string
}

// Mapper applies a rule list; the zero value is not usable, use Parse.
type Mapper struct {
	defaultRealm string
	rules        []rule
}

var ruleRE = regexp.MustCompile(`^\s*(?:(DEFAULT)|RULE:\[(\d*):([^\]]*)\](?:\(([^)]*)\))?(?:s/([^/]*)/([^/]*)/(g)?)?)/?(L)?`)

// Parse reads a hadoop.security.auth_to_local value ("" means DEFAULT).
// defaultRealm is the realm DEFAULT accepts (Hadoop: krb5.conf's
// default_realm).
func Parse(rules, defaultRealm string) (*Mapper, error) {
	if len(rules) > MaxRulesBytes {
		return nil, fmt.Errorf("auth_to_local: %d bytes of rules, limit %d", len(rules), MaxRulesBytes)
	}
	m := &Mapper{defaultRealm: defaultRealm}
	rest := strings.TrimSpace(rules)
	if rest == "" {
		rest = "DEFAULT"
	}
	for rest != "" {
		loc := ruleRE.FindStringSubmatchIndex(rest)
		if loc == nil || loc[1] == 0 {
			return nil, fmt.Errorf("auth_to_local: invalid rule at %q", clip(rest))
		}
		g := func(i int) string {
			if loc[2*i] < 0 {
				return ""
			}
			return rest[loc[2*i]:loc[2*i+1]]
		}
		r := rule{text: strings.TrimSpace(rest[:loc[1]]), lower: g(8) == "L"}
		if g(1) != "" {
			r.isDefault = true
		} else {
			n, err := strconv.Atoi(g(2))
			if err != nil || n < 0 || n > 64 {
				return nil, fmt.Errorf("auth_to_local: bad component count in %q", r.text)
			}
			r.n, r.format = n, g(3)
			if loc[8] >= 0 {
				if r.match, err = regexp.Compile("^(?:" + g(4) + ")$"); err != nil {
					return nil, fmt.Errorf("auth_to_local: %q: %w", r.text, err)
				}
			}
			if loc[10] >= 0 {
				if r.from, err = regexp.Compile(g(5)); err != nil {
					return nil, fmt.Errorf("auth_to_local: %q: %w", r.text, err)
				}
				r.to, r.global = g(6), g(7) == "g"
			}
		}
		m.rules = append(m.rules, r)
		rest = strings.TrimSpace(rest[loc[1]:])
	}
	return m, nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

var paramRE = regexp.MustCompile(`\$(\d+)`)

// ShortName maps "name[/host]@REALM". A name without realm or instance is
// returned unchanged, as in Hadoop.
func (m *Mapper) ShortName(principal string) (string, error) {
	at := strings.LastIndexByte(principal, '@')
	if at < 0 && !strings.Contains(principal, "/") {
		return principal, nil
	}
	realm, name := "", principal
	if at >= 0 {
		realm, name = principal[at+1:], principal[:at]
	}
	comps := strings.Split(name, "/")
	params := append([]string{realm}, comps...)
	for _, r := range m.rules {
		var result string
		ok := false
		if r.isDefault {
			if realm == m.defaultRealm {
				result, ok = comps[0], true
			}
		} else if r.n == len(comps) {
			base := paramRE.ReplaceAllStringFunc(r.format, func(p string) string {
				i, _ := strconv.Atoi(p[1:])
				if i < len(params) {
					return params[i]
				}
				return p
			})
			if r.match == nil || r.match.MatchString(base) {
				result, ok = base, true
				if r.from != nil {
					result = substitute(base, r.from, r.to, r.global)
				}
			}
		}
		if !ok {
			continue
		}
		if strings.ContainsAny(result, "@/") {
			return "", fmt.Errorf("%w: non-simple name %s after rule %s", ErrNoMatchingRule, result, r.text)
		}
		if r.lower {
			result = strings.ToLower(result)
		}
		return result, nil
	}
	return "", fmt.Errorf("%w: no rules applied to %s", ErrNoMatchingRule, principal)
}

// substitute replaces the first (or every) match; Java's $1 group
// references work as in Go's Expand.
func substitute(s string, from *regexp.Regexp, to string, global bool) string {
	if global {
		return from.ReplaceAllString(s, to)
	}
	loc := from.FindStringSubmatchIndex(s)
	if loc == nil {
		return s
	}
	var dst []byte
	dst = from.ExpandString(dst, to, s, loc)
	return s[:loc[0]] + string(dst) + s[loc[1]:]
}

// Package appacl decides who may view or modify an application, as an RM
// with yarn.acl.enable does (ApplicationACLsManager): Hadoop's
// AccessControlList syntax (also the router's admin_acl), the owner and
// VIEW_APP/MODIFY_APP lists of each application, kept in a bounded LRU
// and read back from the state store's home rows when a router did not see
// the submission. Which call needs which access, and the refusals the
// client sees, belong to the protocols (the router's IPC and REST code).
package appacl

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strings"
)

// ACL is an access control list in the syntax of Hadoop's
// AccessControlList (yarn.admin.acl): comma-separated users, a space, then
// comma-separated groups; "*" allows everyone.
type ACL struct {
	all    bool
	users  []string
	groups []string
}

// ParseACL parses s. An empty s means the user this process runs as (the
// router's safe default; Hadoop's DEFAULT_YARN_ADMIN_ACL is "*").
func ParseACL(s string) (ACL, error) {
	if s == "" {
		if u, err := user.Current(); err == nil && u.Username != "" {
			return ACL{users: []string{u.Username}}, nil
		}
		if name := os.Getenv("USER"); name != "" {
			return ACL{users: []string{name}}, nil
		}
		return ACL{}, errors.New("no ACL given and the user this process runs as is unknown: set admin_acl")
	}
	if strings.TrimSpace(s) == "*" {
		return ACL{all: true}, nil
	}
	usersPart, groupsPart, _ := strings.Cut(s, " ")
	split := func(p string) []string {
		var out []string
		for _, x := range strings.Split(p, ",") {
			if x = strings.TrimSpace(x); x != "" {
				out = append(out, x)
			}
		}
		return out
	}
	a := ACL{users: split(usersPart), groups: split(groupsPart)}
	for _, n := range append(slices.Clone(a.users), a.groups...) {
		if n == "*" {
			return ACL{}, fmt.Errorf("%q: \"*\" must stand alone", s)
		}
	}
	return a, nil
}

// Allows reports whether name (whose groups groupsOf returns) is in the
// list.
func (a ACL) Allows(name string, groupsOf func(string) []string) bool {
	if a.all {
		return true
	}
	if name == "" {
		return false
	}
	if slices.Contains(a.users, name) {
		return true
	}
	if len(a.groups) == 0 {
		return false
	}
	for _, g := range groupsOf(name) {
		if slices.Contains(a.groups, g) {
			return true
		}
	}
	return false
}

package appacl

import (
	"strings"
	"testing"
)

// String renders the list in Hadoop's syntax.
func (a ACL) String() string {
	if a.all {
		return "*"
	}
	return strings.Join(a.users, ",") + " " + strings.Join(a.groups, ",")
}

func TestParseACL(t *testing.T) {
	groups := func(u string) []string {
		if u == "carol" {
			return []string{"ops", "admins"}
		}
		return nil
	}
	tests := []struct {
		acl   string
		allow []string
		deny  []string
	}{
		{"*", []string{"anyone"}, nil},
		{"alice,bob", []string{"alice", "bob"}, []string{"carol", ""}},
		{"alice admins", []string{"alice", "carol"}, []string{"bob"}},
		{" admins", []string{"carol"}, []string{"alice"}},
		{" ", nil, []string{"alice", "carol"}},
	}
	for _, tc := range tests {
		acl, err := ParseACL(tc.acl)
		if err != nil {
			t.Fatalf("%q: %v", tc.acl, err)
		}
		for _, u := range tc.allow {
			if !acl.Allows(u, groups) {
				t.Errorf("%q denies %q", tc.acl, u)
			}
		}
		for _, u := range tc.deny {
			if acl.Allows(u, groups) {
				t.Errorf("%q allows %q", tc.acl, u)
			}
		}
	}
	if _, err := ParseACL("alice,* admins"); err == nil {
		t.Error(`"alice,*" accepted`)
	}
	// The default is the user the router runs as, not Hadoop's "*".
	def, err := ParseACL("")
	if err != nil {
		t.Fatal(err)
	}
	if def.Allows("someone-else", groups) || def.String() == "*" {
		t.Errorf("default ACL %q is too open", def)
	}
}

package hadoopipc

import (
	"fmt"
	"os/user"
	"strings"
)

// GroupMapping resolves a user's groups, as Hadoop's
// hadoop.security.group.mapping does for proxy-user and ACL checks.
type GroupMapping interface {
	Groups(user string) []string
}

// UnixGroups resolves groups from this host's user database (os/user: NSS
// with cgo, /etc/passwd and /etc/group without), as Hadoop's default
// ShellBasedUnixGroupsMapping does on the RM's host. An unknown user has
// no groups.
type UnixGroups struct{}

// Groups implements GroupMapping.
func (UnixGroups) Groups(name string) []string {
	u, err := user.Lookup(name)
	if err != nil {
		return nil
	}
	ids, err := u.GroupIds()
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if g, err := user.LookupGroupId(id); err == nil {
			out = append(out, g.Name)
		}
	}
	return out
}

// StaticGroups is a fixed user -> groups table in front of another
// mapping, as Hadoop's hadoop.user.group.static.mapping.overrides: a user
// it names gets exactly the listed groups (possibly none); any other user
// is asked of Next (nil: no groups).
type StaticGroups struct {
	table map[string][]string
	Next  GroupMapping
}

// ParseStaticGroups parses the overrides syntax
// "user1=group1,group2;user2=;user3=group2" (Hadoop's default value is
// "dr.who=;"). Blank entries are ignored.
func ParseStaticGroups(s string, next GroupMapping) (*StaticGroups, error) {
	sg := &StaticGroups{table: map[string][]string{}, Next: next}
	for _, entry := range strings.Split(s, ";") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, groups, ok := strings.Cut(entry, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("static group mapping %q: entry %q is not user=group1,group2", s, entry)
		}
		gs := []string{}
		for _, g := range strings.Split(groups, ",") {
			if g = strings.TrimSpace(g); g != "" {
				gs = append(gs, g)
			}
		}
		sg.table[name] = gs
	}
	return sg, nil
}

// Groups implements GroupMapping.
func (s *StaticGroups) Groups(name string) []string {
	if gs, ok := s.table[name]; ok {
		return gs
	}
	if s.Next == nil {
		return nil
	}
	return s.Next.Groups(name)
}

package router

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/router/appacl"
)

// AuthzConfig says who may act for whom and on which applications
// (DESIGN.md, "Threat model").
type AuthzConfig struct {
	// ProxyUsers are the superusers that may connect to the client and
	// admin ports on behalf of others, keyed by short user name, as the
	// RM's hadoop.proxyuser.<name>.{hosts,users,groups}. With none (the
	// default), a connection whose real user differs from its effective
	// user is refused, as by an RM without proxyuser settings.
	ProxyUsers map[string]hadoopipc.ProxyUserRule `json:"proxy_users"`
	// StaticGroupMapping overrides the host's groups for the users it
	// names, in the syntax of hadoop.user.group.static.mapping.overrides
	// ("user1=group1,group2;user2=;"). Other users' groups come from the
	// router host's user database, as Hadoop's
	// ShellBasedUnixGroupsMapping.
	StaticGroupMapping string `json:"static_group_mapping"`
	// ACLEnable turns on application ACL checks (yarn.acl.enable): kill,
	// move, priority, timeouts, attempt failure and signals need
	// MODIFY_APP; attempts and containers need VIEW_APP; reports of
	// applications the caller may not view are filtered. Owners and
	// admin_acl users may do anything.
	ACLEnable bool `json:"acl_enable"`
	// AppACLCacheSize bounds the applications whose ACLs the router
	// remembers from their submission (default 100000); an application not
	// remembered is left to its RM's own ACL check.
	AppACLCacheSize int `json:"app_acl_cache_size"`
}

func (c AuthzConfig) validate() error {
	var errs []error
	if _, err := hadoopipc.NewProxyUsers(c.ProxyUsers, hadoopipc.UnixGroups{}); err != nil {
		errs = append(errs, fmt.Errorf("authz.proxy_users: %w", err))
	}
	if _, err := hadoopipc.ParseStaticGroups(c.StaticGroupMapping, nil); err != nil {
		errs = append(errs, fmt.Errorf("authz.static_group_mapping: %w", err))
	}
	if c.AppACLCacheSize < 0 {
		errs = append(errs, fmt.Errorf("authz.app_acl_cache_size: %d, must be >= 0", c.AppACLCacheSize))
	}
	return errors.Join(errs...)
}

// authz is the built form of AuthzConfig.
type authz struct {
	groups     hadoopipc.GroupMapping
	proxyUsers *hadoopipc.ProxyUsers
	appACLs    *appacl.Table // nil: ACLs off
}

func buildAuthz(c AuthzConfig, adminACL string) (*authz, error) {
	a := &authz{groups: hadoopipc.UnixGroups{}}
	if c.StaticGroupMapping != "" {
		sg, err := hadoopipc.ParseStaticGroups(c.StaticGroupMapping, hadoopipc.UnixGroups{})
		if err != nil {
			return nil, err
		}
		a.groups = sg
	}
	pu, err := hadoopipc.NewProxyUsers(c.ProxyUsers, a.groups)
	if err != nil {
		return nil, err
	}
	a.proxyUsers = pu
	if c.ACLEnable {
		admins, err := appacl.ParseACL(adminACL)
		if err != nil {
			return nil, fmt.Errorf("admin_acl: %w", err)
		}
		a.appACLs = appacl.NewTable(admins, a.groups, c.AppACLCacheSize)
	}
	return a, nil
}

// authorizeConnection is the IPC ports' connection check: the
// authz.proxy_users rules, unless an in-process Config.AuthorizeProxyUser
// hook judges doAs per call instead. With the rules in force the per-call
// Kerberos check (authorizeProxy) has nothing left to refuse: every
// proxied connection passed them at its handshake.
func (r *Router) authorizeConnection() func(context.Context, hadoopipc.User, net.Addr) error {
	if r.cfg.AuthorizeProxyUser != nil {
		return nil
	}
	return r.authz.proxyUsers.AuthorizeConnection
}

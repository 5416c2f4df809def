package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/yarnfed/yarnfed/statestore/security"
)

// newCertsCmd is `yarnfed certs`: a federation CA and per-party
// certificates for the state store's mutual TLS (test clusters and small
// deployments; bring your own PKI otherwise: only CN and O= matter).
func newCertsCmd() *cobra.Command {
	var (
		dir      string
		validity time.Duration
		hosts    []string
	)
	cmd := &cobra.Command{
		Use:   "certs NAME=ROLE[+ROLE]...",
		Short: "Create a CA (if absent) and certificates for state store mutual TLS",
		Long: `certs writes DIR/ca.crt and DIR/ca.key once (reused afterwards) and, for each NAME=ROLE argument,
DIR/NAME/cert.crt, DIR/NAME/cert.key and DIR/NAME/ca.crt, ready for --tls-cert/--tls-key/--tls-ca
(statestore) or --store-tls-cert/--store-tls-key/--store-tls-ca (every other role and yarnfedctl).

The certificate's CN is NAME and its O= values are the roles: admin, replica, router, agent,
amrmproxy, gpg. An agent's NAME must be the sub-cluster id it registers. Re-running replaces a
party's files in place; running processes pick them up without a restart.`,
		Example: `  yarnfed certs --dir /etc/yarnfed/pki ss1=replica ss2=replica ss3=replica ops=admin \
      router-1=router SC-1=agent SC-2=agent nm-1=amrmproxy gpg-1=gpg`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ca, err := loadOrCreateCA(dir, validity)
			if err != nil {
				return err
			}
			for _, a := range args {
				name, rs, ok := strings.Cut(a, "=")
				if !ok || name == "" || rs == "" || strings.ContainsAny(name, `/\`) {
					return fmt.Errorf("%q: want NAME=ROLE[+ROLE]", a)
				}
				var roles []security.Role
				for _, r := range strings.Split(rs, "+") {
					role := security.Role(r)
					if !isRole(role) {
						return fmt.Errorf("%q: unknown role %q (want one of %v)", a, r, security.AllRoles)
					}
					roles = append(roles, role)
				}
				info, err := ca.WriteFiles(filepath.Join(dir, name), "cert", security.Leaf{Name: name, Roles: roles, Hosts: hosts, NotAfter: time.Now().Add(validity)})
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s (%s): %s %s %s\n", name, rs, info.CertFile, info.KeyFile, info.CAFile)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "yarnfed-pki", "directory for the CA and the certificates")
	f.DurationVar(&validity, "validity", 365*24*time.Hour, "validity of new certificates (and of a new CA: 10x)")
	f.StringSliceVar(&hosts, "host", nil, "DNS names or IPs to put in the certificates' SANs (informational: peers check roles, not names)")
	return cmd
}

func isRole(r security.Role) bool {
	for _, x := range security.AllRoles {
		if x == r {
			return true
		}
	}
	return false
}

func loadOrCreateCA(dir string, validity time.Duration) (*security.CA, error) {
	crt, key := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	if _, err := os.Stat(crt); err == nil {
		return security.LoadCA(crt, key)
	}
	ca, err := security.NewCA("yarnfed CA", 10*validity)
	if err != nil {
		return nil, err
	}
	kp, err := ca.KeyPEM()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(key, kp, 0o600); err != nil {
		return nil, err
	}
	return ca, os.WriteFile(crt, ca.PEM, 0o644)
}

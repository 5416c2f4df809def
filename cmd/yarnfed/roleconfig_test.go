package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/yarnfed/yarnfed/internal/config"
	"github.com/yarnfed/yarnfed/internal/krblogin"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/router"
	"github.com/yarnfed/yarnfed/statestore/security"
	"github.com/yarnfed/yarnfed/subclusteragent"
)

// A role's configuration cases: a file (or none), command-line flags, and
// what the loaded configuration must be, or the error it must fail with.
type roleCase[T any] struct {
	name    string
	file    string // JSON; "" = no --config
	args    []string
	check   func(t *testing.T, got T)
	wantErr string
}

// runRoleCases parses each case's command line on a fresh role command and
// loads its configuration through the command's own loader, as RunE does.
func runRoleCases[T any](t *testing.T, newCmd func() *cobra.Command, cases []roleCase[T]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cmd := newCmd()
			args := tc.args
			if tc.file != "" {
				p := filepath.Join(t.TempDir(), "role.json")
				if err := os.WriteFile(p, []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append([]string{"--config", p}, args...)
			}
			if err := cmd.ParseFlags(args); err != nil {
				t.Fatal(err)
			}
			l, ok := cmd.Flags().Lookup(config.ConfigFlag).Value.(*config.Loader[T])
			if !ok {
				t.Fatalf("%s: --config is not a config.Loader of this role's type", cmd.Name())
			}
			got, err := l.Load()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Load = %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, got)
		})
	}
}

func dur(s string) config.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return config.Duration(d)
}

func expect[V comparable](t *testing.T, what string, got, want V) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func TestRouterRoleConfig(t *testing.T) {
	def := routerRoleDefaults()
	file := `{"clientrm_address":"127.0.0.1:1","failover_wait":"7s","partial_results":true,"admin_acl":"alice",
		"web":{"read_timeout":"7s","max_conns":2},"ipc":{"handshake_timeout":"3s","max_conns_per_addr":9},"breaker":{"open_for":"4s"},
		"store":["s1:9090","s2:9090"],"store_tls":{"cert_file":"r.crt","key_file":"r.key","ca_file":"ca.crt"},"log_level":"debug"}`
	runRoleCases(t, newRouterCmd, []roleCase[routerRole]{
		{name: "defaults", args: []string{"--store-insecure"}, check: func(t *testing.T, c routerRole) {
			expect(t, "admin_address", c.AdminAddress, router.DefaultAdminAddress) // the role turns the admin port on
			expect(t, "failover_wait", c.FailoverWait, def.FailoverWait)
			expect(t, "web.read_timeout", c.Web.ReadTimeout, def.Web.ReadTimeout)
			expect(t, "store", strings.Join(c.addrs(), ","), "127.0.0.1:9090")
			expect(t, "log_level", c.LogLevel, "info")
		}},
		{name: "file over defaults", file: file, check: func(t *testing.T, c routerRole) {
			expect(t, "clientrm_address", c.ClientRMAddress, "127.0.0.1:1")
			expect(t, "failover_wait", c.FailoverWait, dur("7s"))
			expect(t, "partial_results", c.PartialResults, true)
			expect(t, "web.read_timeout", c.Web.ReadTimeout, dur("7s"))
			expect(t, "web.max_conns", c.Web.MaxConns, 2)
			expect(t, "web.idle_timeout", c.Web.IdleTimeout, def.Web.IdleTimeout)
			expect(t, "ipc.handshake_timeout", c.IPC.HandshakeTimeout, dur("3s"))
			expect(t, "breaker.open_for", c.Breaker.OpenFor, dur("4s"))
			expect(t, "submit_retries", c.SubmitRetries, def.SubmitRetries)
			expect(t, "store", strings.Join(c.addrs(), ","), "s1:9090,s2:9090")
			expect(t, "store_tls", c.TLS, security.TLSInfo{CertFile: "r.crt", KeyFile: "r.key", CAFile: "ca.crt"})
			expect(t, "log_level", c.LogLevel, "debug")
		}},
		{name: "flags over file", file: file, args: []string{"--clientrm-address", "127.0.0.1:2", "--failover-wait", "9s",
			"--web-read-timeout", "8s", "--web-max-conns", "3", "--admin-acl", "bob ops", "--store", "s9:9090", "--store", "s3:9090", "--store-tls-ca", "other.crt", "--log-level", "warn"},
			check: func(t *testing.T, c routerRole) {
				expect(t, "clientrm_address", c.ClientRMAddress, "127.0.0.1:2")
				expect(t, "failover_wait", c.FailoverWait, dur("9s"))
				expect(t, "web.read_timeout", c.Web.ReadTimeout, dur("8s"))
				expect(t, "web.max_conns", c.Web.MaxConns, 3)
				expect(t, "admin_acl", c.AdminACL, "bob ops")
				expect(t, "ipc.max_conns_per_addr (file)", c.IPC.MaxConnsPerAddr, 9)
				expect(t, "partial_results (file)", c.PartialResults, true)
				expect(t, "store (the last --store wins)", strings.Join(c.addrs(), ","), "s3:9090")
				expect(t, "store_tls", c.TLS, security.TLSInfo{CertFile: "r.crt", KeyFile: "r.key", CAFile: "other.crt"})
				expect(t, "log_level", c.LogLevel, "warn")
			}},
		{name: "kerberos file under flags", file: `{"store_insecure":true,"kerberos":{"principal":"rm/_HOST@FILE.REALM","keytab":"/file.keytab","auth_to_local":"DEFAULT"}}`,
			args: []string{"--kerberos-keytab", "/flag.keytab", "--rm-principal", "rm/_HOST@R", "--kerberos-allow-simple"},
			check: func(t *testing.T, c routerRole) {
				want := router.KerberosConfig{Principal: "rm/_HOST@FILE.REALM", Keytab: "/flag.keytab", RMPrincipal: "rm/_HOST@R", AuthToLocal: "DEFAULT", AllowSimple: true}
				expect(t, "kerberos", c.Kerberos, want)
			}},
		{name: "unknown key is named", file: `{"web":{"read_timout":"1s"}}`, args: []string{"--store-insecure"}, wantErr: `"read_timout"`},
		{name: "no store transport", wantErr: "--store-insecure"},
		{name: "half a TLS setting", file: `{"store_tls":{"cert_file":"r.crt"}}`, wantErr: "ca_file"},
		{name: "bad log level", file: `{"log_level":"loud","store_insecure":true}`, wantErr: "log_level"},
	})
}

func TestAMRMProxyRoleConfig(t *testing.T) {
	def := amrmproxyRoleDefaults()
	file := `{"subcluster_id":"SC-9","data_dir":"/from/file","secondary_wait":"70ms","breaker":{"open_for":"3s"},"store_insecure":true}`
	runRoleCases(t, newAMRMProxyCmd, []roleCase[amrmproxyRole]{
		{name: "defaults", args: []string{"--store-insecure"}, check: func(t *testing.T, c amrmproxyRole) {
			expect(t, "amrm_address", c.AMRMAddress, def.AMRMAddress)
			expect(t, "secondary_wait", c.SecondaryWait, def.SecondaryWait)
		}},
		{name: "file over defaults", file: file, check: func(t *testing.T, c amrmproxyRole) {
			expect(t, "subcluster_id", c.SubClusterID, "SC-9")
			expect(t, "secondary_wait", c.SecondaryWait, dur("70ms"))
			expect(t, "breaker.open_for", c.Breaker.OpenFor, dur("3s"))
			expect(t, "store_insecure", c.Insecure, true)
		}},
		{name: "flags over file", file: file, args: []string{"--data-dir", "/from/flag", "--subcluster-timeout", "5s", "--secondary-wait", "90ms"},
			check: func(t *testing.T, c amrmproxyRole) {
				expect(t, "subcluster_id (file)", c.SubClusterID, "SC-9")
				expect(t, "data_dir", c.DataDir, "/from/flag")
				expect(t, "subcluster_timeout", c.SubClusterTimeout, dur("5s"))
				expect(t, "secondary_wait", c.SecondaryWait, dur("90ms"))
				expect(t, "breaker.open_for (file)", c.Breaker.OpenFor, dur("3s"))
				expect(t, "call_timeout", c.CallTimeout, def.CallTimeout)
			}},
		{name: "unknown key is named", file: `{"subcluster_idd":"x"}`, wantErr: `"subcluster_idd"`},
	})
}

func TestGPGRoleConfig(t *testing.T) {
	def := gpgRoleDefaults()
	file := `{"interval":"7s","generator":{"policy":"load-based","threshold":0.1},"cleaner":{"dry_run":true,"interval":"1h"},
		"uam_reaper":{"enabled":true,"interval":"45s","dry_run":true,"rm_user":"yarn"},
		"kubernetes":[{"name":"east","default_sub_cluster":"SC-K8S"}],"store":"s1:9090, s4:9090","store_insecure":true}`
	runRoleCases(t, newGPGCmd, []roleCase[gpgRole]{
		{name: "defaults", args: []string{"--store-insecure"}, check: func(t *testing.T, c gpgRole) {
			expect(t, "interval", c.Interval, def.Interval)
			expect(t, "generator.threshold", c.Generator.Threshold, def.Generator.Threshold)
			expect(t, "uam_reaper.enabled", c.UAMReaper.Enabled, false)
			expect(t, "uam_reaper.interval", c.UAMReaper.Interval, dur("30s"))
		}},
		{name: "uam reaper flags", args: []string{"--store-insecure", "--uam-reaper", "--uam-reaper-interval", "5s", "--uam-reaper-dry-run",
			"--uam-reaper-max-per-round", "7", "--uam-reaper-grace", "1m"}, check: func(t *testing.T, c gpgRole) {
			want := def.UAMReaper
			want.Enabled, want.Interval, want.DryRun, want.MaxPerRound, want.Grace = true, dur("5s"), true, 7, dur("1m")
			expect(t, "uam_reaper", c.UAMReaper, want)
		}},
		{name: "file over defaults", file: file, check: func(t *testing.T, c gpgRole) {
			expect(t, "interval", c.Interval, dur("7s"))
			expect(t, "generator.policy", c.Generator.Policy, "load-based")
			expect(t, "generator.threshold", c.Generator.Threshold, 0.1)
			expect(t, "cleaner.interval", c.Cleaner.Interval, dur("1h"))
			expect(t, "cleaner.max_per_round", c.Cleaner.MaxPerRound, def.Cleaner.MaxPerRound)
			want := def.UAMReaper
			want.Enabled, want.Interval, want.DryRun, want.RMUser = true, dur("45s"), true, "yarn"
			expect(t, "uam_reaper", c.UAMReaper, want)
			expect(t, "store (one string)", strings.Join(c.addrs(), ","), "s1:9090,s4:9090")
			if len(c.Kubernetes) != 1 || c.Kubernetes[0].StaleAfter != dur("15m") {
				t.Errorf("kubernetes = %+v (entries decode over kube.DefaultConfig)", c.Kubernetes)
			}
		}},
		{name: "flags over file", file: file, args: []string{"--threshold", "0.2", "--read-only", "--cleaner-interval", "2h", "--store", "s2:9090"},
			check: func(t *testing.T, c gpgRole) {
				expect(t, "generator.threshold", c.Generator.Threshold, 0.2)
				expect(t, "generator.read_only", c.Generator.ReadOnly, true)
				expect(t, "generator.policy (file)", c.Generator.Policy, "load-based")
				expect(t, "cleaner.interval", c.Cleaner.Interval, dur("2h"))
				expect(t, "cleaner.dry_run (file)", c.Cleaner.DryRun, true)
				expect(t, "uam_reaper.enabled (file)", c.UAMReaper.Enabled, true)
				expect(t, "interval (file)", c.Interval, dur("7s"))
				expect(t, "store", strings.Join(c.addrs(), ","), "s2:9090")
			}},
		{name: "unknown key is named", file: `{"generator":{"treshold":0.1}}`, wantErr: `"treshold"`},
		{name: "unknown key in a kubernetes entry is named", file: `{"kubernetes":[{"name":"e","default_subcluster":"x"}]}`, wantErr: `"default_subcluster"`},
		{name: "kerberos file under flags", file: `{"store_insecure":true,"kerberos":{"principal":"gpg/_HOST@FILE.REALM","keytab":"/file.keytab","rm_principal":"rm/_HOST@FILE.REALM"}}`,
			args: []string{"--kerberos-keytab", "/flag.keytab", "--rm-principal", "rm/_HOST@R", "--krb5-conf", "/flag.conf"},
			check: func(t *testing.T, c gpgRole) {
				want := krblogin.Config{Principal: "gpg/_HOST@FILE.REALM", Keytab: "/flag.keytab", Krb5Conf: "/flag.conf", RMPrincipal: "rm/_HOST@R"}
				expect(t, "kerberos", c.Kerberos, want)
			}},
		{name: "kerberos rm_principal without principal", args: []string{"--store-insecure", "--rm-principal", "rm/_HOST@R"}, wantErr: "need kerberos.principal"},
	})
}

func TestStatestoreRoleConfig(t *testing.T) {
	def := statestoreRoleDefaults()
	file := `{"node_id":"from-file","data_dir":"/file","election_timeout":"2s","peers":["from-file=h:1"],"bootstrap":true,
		"tls":{"cert_file":"ss.crt","key_file":"ss.key","ca_file":"ca.crt"},"log_level":"debug"}`
	runRoleCases(t, newStatestoreCmd, []roleCase[statestoreRole]{
		{name: "defaults", check: func(t *testing.T, c statestoreRole) {
			expect(t, "node_id", c.NodeID, def.NodeID)
			expect(t, "election_timeout", c.ElectionTimeout, def.ElectionTimeout)
		}},
		{name: "flags only", args: []string{"--node-id=x", "--election-timeout=300ms"}, check: func(t *testing.T, c statestoreRole) {
			expect(t, "node_id", c.NodeID, "x")
			expect(t, "election_timeout", c.ElectionTimeout, dur("300ms"))
		}},
		{name: "file over defaults", file: file, check: func(t *testing.T, c statestoreRole) {
			expect(t, "node_id", c.NodeID, "from-file")
			expect(t, "election_timeout", c.ElectionTimeout, dur("2s"))
			expect(t, "grpc_address", c.GRPCAddress, def.GRPCAddress)
			expect(t, "tls.cert_file", c.TLS.CertFile, "ss.crt")
			expect(t, "log_level", c.LogLevel, "debug")
		}},
		{name: "flags over file", file: file, args: []string{"--data-dir=/flag", "--election-timeout=700ms", "--peers=from-file=h:9", "--tls-cert=other.crt"},
			check: func(t *testing.T, c statestoreRole) {
				expect(t, "node_id (file)", c.NodeID, "from-file")
				expect(t, "data_dir", c.DataDir, "/flag")
				expect(t, "election_timeout", c.ElectionTimeout, dur("700ms"))
				expect(t, "peers", strings.Join(c.Peers, ","), "from-file=h:9")
				expect(t, "tls", c.TLS, security.TLSInfo{CertFile: "other.crt", KeyFile: "ss.key", CAFile: "ca.crt"})
			}},
		{name: "unknown key is named", file: `{"node_idd":"x"}`, wantErr: `"node_idd"`},
		{name: "validated before start", args: []string{"--bootstrap", "--join=h:1"}, wantErr: "exclusive"},
		{name: "file and flag conflict is caught", file: `{"insecure":true}`, args: []string{"--tls-cert=a", "--tls-key=b", "--tls-ca=c"}, wantErr: "exclusive"},
	})
}

func TestSimrmRoleConfig(t *testing.T) {
	def := simrmRoleDefaults()
	file := `{"cluster_id":"sc-file","nodes":3,"tick_interval":"50ms","queues":[{"name":"a","capacity":60},{"name":"b","capacity":40,"max_capacity":80}],
		"sim_am":{"heartbeat":"2s","resource":{"memory_mb":512}},"faults":{"latency":"5ms"},"max_allocation":{"vcores":2}}`
	runRoleCases(t, newSimrmCmd, []roleCase[simrmRole]{
		{name: "defaults", check: func(t *testing.T, c simrmRole) {
			expect(t, "tick_interval", c.TickInterval, def.TickInterval)
			if !reflect.DeepEqual(c.Queues, def.Queues) {
				t.Errorf("queues = %v", c.Queues)
			}
		}},
		{name: "file over defaults", file: file, check: func(t *testing.T, c simrmRole) {
			expect(t, "cluster_id", c.ClusterID, "sc-file")
			expect(t, "tick_interval", c.TickInterval, dur("50ms"))
			expect(t, "sim_am.heartbeat", c.SimAM.Heartbeat, dur("2s"))
			expect(t, "sim_am.resource.memory_mb", c.SimAM.Resource.MemoryMB, 512)
			expect(t, "sim_am.resource.vcores", c.SimAM.Resource.VCores, def.SimAM.Resource.VCores)
			expect(t, "faults.latency", c.Faults.Latency, dur("5ms"))
			expect(t, "max_allocation", c.MaxAllocation, simrm.Resource{MemoryMB: def.MaxAllocation.MemoryMB, VCores: 2})
			expect(t, "queues", c.Queues.String(), "a:60,b:40:80")
		}},
		{name: "flags over file", file: file, args: []string{"--tick", "20ms", "--sim-am-container-mb", "256", "--queues", "x:100", "--fault-latency", "0s", "--nodes", "4"},
			check: func(t *testing.T, c simrmRole) {
				expect(t, "cluster_id (file)", c.ClusterID, "sc-file")
				expect(t, "tick_interval", c.TickInterval, dur("20ms"))
				expect(t, "sim_am.resource.memory_mb", c.SimAM.Resource.MemoryMB, 256)
				expect(t, "sim_am.heartbeat (file)", c.SimAM.Heartbeat, dur("2s"))
				expect(t, "faults.latency", c.Faults.Latency, 0)
				expect(t, "nodes", c.Nodes, 4)
				expect(t, "queues", c.Queues.String(), "x:100")
			}},
		{name: "unknown key is named", file: `{"sim_am":{"hartbeat":"1s"}}`, wantErr: `"hartbeat"`},
		{name: "bad queues flag", args: []string{"--queues", "a:60"}, wantErr: "sum to 100"},
	})
}

func TestSubclusterAgentRoleConfig(t *testing.T) {
	def := agentRoleDefaults()
	file := `{"subcluster_id":"SC-1","rms":["rm1.example.com",{"clientrm":"rm2:1","amrm":"rm2:2","admin":"rm2:3","web":"rm2:4"}],
		"probe_interval":"3s","metrics_address":"127.0.0.1:0","store_tls":{"cert_file":"a.crt","key_file":"a.key","ca_file":"ca.crt"}}`
	rm1, _ := subclusteragent.ParseRMEndpoint("rm1.example.com")
	runRoleCases(t, newSubclusterAgentCmd, []roleCase[agentRole]{
		{name: "defaults", args: []string{"--store-insecure"}, check: func(t *testing.T, c agentRole) {
			expect(t, "probe_interval", c.ProbeInterval, def.ProbeInterval)
			expect(t, "rms", len(c.RMs), 0)
		}},
		{name: "file over defaults", file: file, check: func(t *testing.T, c agentRole) {
			expect(t, "subcluster_id", c.SubClusterID, "SC-1")
			if len(c.RMs) != 2 || c.RMs[0] != rm1 || c.RMs[1] != (subclusteragent.RMEndpoint{ClientRM: "rm2:1", AMRM: "rm2:2", Admin: "rm2:3", Web: "rm2:4"}) {
				t.Errorf("rms = %+v", c.RMs)
			}
			expect(t, "probe_interval", c.ProbeInterval, dur("3s"))
			expect(t, "probe_timeout", c.ProbeTimeout, def.ProbeTimeout)
			expect(t, "metrics_address", c.MetricsAddress, "127.0.0.1:0")
			expect(t, "store_tls.cert_file", c.TLS.CertFile, "a.crt")
		}},
		{name: "flags over file", file: file, args: []string{"--rm", "rm9.example.com", "--probe-interval", "4s", "--store-tls-cert", "b.crt"},
			check: func(t *testing.T, c agentRole) {
				want, _ := subclusteragent.ParseRMEndpoint("rm9.example.com")
				if len(c.RMs) != 1 || c.RMs[0] != want {
					t.Errorf("rms = %+v, want the flag's list only", c.RMs)
				}
				expect(t, "probe_interval", c.ProbeInterval, dur("4s"))
				expect(t, "store_tls", c.TLS, security.TLSInfo{CertFile: "b.crt", KeyFile: "a.key", CAFile: "ca.crt"})
			}},
		{name: "unknown key is named", file: `{"rms":[{"clientrm":"h:1","adm":"h:2"}]}`, args: []string{"--store-insecure"}, wantErr: `"adm"`},
		{name: "bad rm string in the file", file: `{"rms":["h:1"]}`, args: []string{"--store-insecure"}, wantErr: "host name"},
		{name: "kerberos file under flags", file: `{"store_insecure":true,"kerberos":{"principal":"agent/_HOST@FILE.REALM","keytab":"/file.keytab","krb5_conf":"/file.conf"}}`,
			args: []string{"--kerberos-keytab", "/flag.keytab", "--rm-http-principal", "HTTP/_HOST@R"},
			check: func(t *testing.T, c agentRole) {
				want := krblogin.Config{Principal: "agent/_HOST@FILE.REALM", Keytab: "/flag.keytab", Krb5Conf: "/file.conf", RMHTTPPrincipal: "HTTP/_HOST@R"}
				expect(t, "kerberos", c.Kerberos, want)
			}},
		{name: "kerberos without keytab", args: []string{"--store-insecure", "--kerberos-principal", "agent/h@R"}, wantErr: "kerberos.keytab"},
		{name: "the agent takes no IPC rm_principal", file: `{"store_insecure":true,"kerberos":{"principal":"agent/h@R","keytab":"/k","rm_principal":"rm/_HOST@R"}}`,
			wantErr: "kerberos.rm_principal"},
	})
}

// TestEveryRoleFlagHasAFileKey walks every role's flags: each must write a
// field of the role's config that the JSON file names (so a flag and the
// file cannot drift apart), the key must be in the file format as
// encoding/json writes it (a key two embedded structs both claim would
// vanish), and the help text names it.
func TestEveryRoleFlagHasAFileKey(t *testing.T) {
	type keyed interface {
		Keys() (map[string]string, []string, error)
		DefaultsJSON() ([]byte, error)
	}
	root := newRootCmd()
	var roles []string
	for _, cmd := range root.Commands() {
		f := cmd.Flags().Lookup(config.ConfigFlag)
		if f == nil {
			continue
		}
		roles = append(roles, cmd.Name())
		l, ok := f.Value.(keyed)
		if !ok {
			t.Errorf("%s: --config is not a config.Loader", cmd.Name())
			continue
		}
		keys, unbound, err := l.Keys()
		if err != nil {
			t.Errorf("%s: %v", cmd.Name(), err)
		}
		if len(unbound) > 0 {
			t.Errorf("%s: flags no config file can set: %v", cmd.Name(), unbound)
		}
		b, err := l.DefaultsJSON()
		if err != nil {
			t.Fatalf("%s: %v", cmd.Name(), err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		for flag, key := range keys {
			var at any = doc
			for _, part := range strings.Split(key, ".") {
				m, _ := at.(map[string]any)
				v, ok := m[part]
				if !ok {
					t.Errorf("%s --%s: key %s is not in the file format:\n%s", cmd.Name(), flag, key, b)
					break
				}
				at = v
			}
			if u := cmd.Flags().Lookup(flag).Usage; !strings.HasSuffix(u, "[file: "+key+"]") {
				t.Errorf("%s --%s: help does not name its key: %q", cmd.Name(), flag, u)
			}
		}
	}
	for _, want := range []string{"simrm", "router", "subcluster-agent", "statestore", "amrmproxy", "gpg"} {
		if !slices.Contains(roles, want) {
			t.Errorf("role %s has no --config", want)
		}
	}
}

package node

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/statestore/client"
	"github.com/yarnfed/yarnfed/statestore/security"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// BenchmarkTransport measures what mutual TLS and the interceptor chain
// cost a single replica (Raft log fsync off, so the transport shows):
// parallel application-home inserts and linearizable reads through
// statestore/client.
func BenchmarkTransport(b *testing.B) {
	for _, secure := range []bool{false, true} {
		name := "plaintext"
		if secure {
			name = "mtls"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			cfg := DefaultConfig()
			cfg.NodeID = "b"
			cfg.DataDir = b.TempDir()
			cfg.GRPCAddress, cfg.HTTPAddress = "127.0.0.1:0", ""
			cfg.RaftAddress = benchAddr(b)
			cfg.Bootstrap, cfg.NoSync, cfg.Insecure = true, true, !secure
			var tc *tls.Config
			if secure {
				ca, err := security.NewCA("bench", time.Hour)
				if err != nil {
					b.Fatal(err)
				}
				if cfg.TLS, err = ca.WriteFiles(b.TempDir(), "ss", security.Leaf{Name: "b", Roles: []security.Role{security.RoleReplica}}); err != nil {
					b.Fatal(err)
				}
				ci, err := ca.WriteFiles(b.TempDir(), "r", security.Leaf{Name: "r", Roles: []security.Role{security.RoleRouter}})
				if err != nil {
					b.Fatal(err)
				}
				r, err := security.NewReloader(ci)
				if err != nil {
					b.Fatal(err)
				}
				tc = r.ClientConfig()
			}
			n := startLeader(b, ctx, cfg)
			defer n.Close()
			c, err := client.New(client.Config{Addrs: []string{n.GRPCAddr()}, TLS: tc, DisableCache: true})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			var seq atomic.Int64
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(p *testing.PB) {
				for p.Next() {
					i := seq.Add(1)
					id := fmt.Sprintf("application_1_%08d", i)
					if _, _, err := c.AddApplicationHome(ctx, &pb.ApplicationHome{ApplicationId: id, HomeSubClusterId: "SC-1"}); err != nil {
						b.Error(err)
						return
					}
					if _, err := c.GetApplicationHome(ctx, id, false); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func benchAddr(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

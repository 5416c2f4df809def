package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// etcdTarget is a 3-member etcd cluster on loopback, each member its own
// process (like our replicas and the ZooKeeper servers; etcd always fsyncs
// its WAL). The binary is the one scripts/kube-binaries.sh builds from the
// Go module proxy (hack/kube pins etcd's server module, so it never enters
// yarnfed's own go.mod); only the client library is linked here, and only
// into the bench build.
//
// An insert is the same operation as ours and ZooKeeper's: a transaction
// "if the key was never created, put it, else read it" (insert-if-absent
// that returns the stored home), not a blind put.
type etcdTarget struct {
	procs   []*exec.Cmd
	clients []*clientv3.Client
	stale   []*clientv3.Client
	data    string
}

const etcdPrefix = "/federationstore/applications/"

// FindEtcd returns the etcd binary to run: explicit, then
// $YARNFED_KUBE_ASSETS (set by CI), then $PATH, then the cache
// scripts/kube-binaries.sh fills.
func FindEtcd(explicit string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	if d := os.Getenv("YARNFED_KUBE_ASSETS"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "etcd")); err == nil {
			return filepath.Join(d, "etcd"), nil
		}
	}
	if p, err := exec.LookPath("etcd"); err == nil {
		return p, nil
	}
	cache := os.Getenv("YARNFED_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "yarnfed")
	}
	m, _ := filepath.Glob(filepath.Join(cache, "kube", "*", "etcd"))
	if len(m) > 0 {
		return m[len(m)-1], nil
	}
	return "", errors.New("no etcd binary: run `make kube-binaries` (builds etcd from the Go module proxy) or pass --etcd-binary")
}

func startEtcd(ctx context.Context, cfg Config) (target, error) {
	bin, err := FindEtcd(cfg.EtcdBinary)
	if err != nil {
		return nil, err
	}
	t := &etcdTarget{}
	var clientURLs, peerURLs, cluster []string
	for i := 0; i < 3; i++ {
		c, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		p, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		clientURLs, peerURLs = append(clientURLs, "http://"+c), append(peerURLs, "http://"+p)
		cluster = append(cluster, fmt.Sprintf("etcd%d=http://%s", i, p))
	}
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("etcd%d", i)
		dir := filepath.Join(cfg.Dir, name)
		logf, err := os.Create(dir + ".log")
		if err != nil {
			t.close()
			return nil, err
		}
		cmd := exec.Command(bin, "--name", name, "--data-dir", dir,
			"--listen-client-urls", clientURLs[i], "--advertise-client-urls", clientURLs[i],
			"--listen-peer-urls", peerURLs[i], "--initial-advertise-peer-urls", peerURLs[i],
			"--initial-cluster", strings.Join(cluster, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "yarnfed-bench", "--log-level", "warn")
		if err := startInGroup(cmd, logf); err != nil {
			t.close()
			return nil, err
		}
		t.procs = append(t.procs, cmd)
	}
	// Leader first for writes, as the yarnfed clients are (followers would
	// forward every proposal); stale readers rotate over the members.
	var eps []string
	for _, u := range clientURLs {
		eps = append(eps, strings.TrimPrefix(u, "http://"))
	}
	leader := ""
	deadline := time.Now().Add(60 * time.Second)
	probe, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.close()
		return nil, err
	}
	defer probe.Close()
	for leader == "" {
		for _, ep := range eps {
			sctx, cancel := context.WithTimeout(ctx, time.Second)
			st, err := probe.Status(sctx, ep)
			cancel()
			if err == nil && st.Leader != 0 && st.Leader == st.Header.MemberId {
				leader = ep
			}
		}
		if leader != "" {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.close()
			return nil, fmt.Errorf("etcd cluster has no leader within 60s (logs in %s)", cfg.Dir)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for i := 0; i < max(cfg.Conns, 1); i++ {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{leader}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.close()
			return nil, err
		}
		t.clients = append(t.clients, c)
		if c, err = clientv3.New(clientv3.Config{Endpoints: []string{eps[i%3]}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}); err != nil {
			t.close()
			return nil, err
		}
		t.stale = append(t.stale, c)
	}
	b, _ := proto.Marshal(&pb.ApplicationHome{ApplicationId: appID(0, 0), HomeSubClusterId: "SC-1", CreateTimeMs: time.Now().UnixMilli()})
	t.data = string(b)
	return t, nil
}

func (t *etcdTarget) insert(ctx context.Context, conn int, id string) error {
	k := etcdPrefix + id
	_, err := t.clients[conn].Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, t.data)).
		Else(clientv3.OpGet(k)).
		Commit()
	return err
}

func (t *etcdTarget) get(ctx context.Context, conn int, id string, stale bool) error {
	if stale {
		_, err := t.stale[conn].Get(ctx, etcdPrefix+id, clientv3.WithSerializable())
		return err
	}
	_, err := t.clients[conn].Get(ctx, etcdPrefix+id)
	return err
}

func (t *etcdTarget) serverCPU() time.Duration { return procCPU(t.procs) }

func (t *etcdTarget) serverRSS() int64 { return procRSS(t.procs) }

func (t *etcdTarget) close() {
	for _, c := range append(t.clients, t.stale...) {
		c.Close()
	}
	for _, p := range t.procs {
		if p.Process != nil {
			p.Process.Signal(syscall.SIGTERM)
			p.Wait()
		}
	}
}

package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/yarnfed/yarnfed/internal/procstat"
	"google.golang.org/protobuf/proto"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// zkTarget is a 3-server ZooKeeper ensemble on loopback, used the way
// Hadoop's ZookeeperFederationStateStore uses it: one znode per
// application under a parent, created (insert-if-absent: NodeExists means
// "read the stored one"), read with getData (stale) or sync+getData
// (linearizable).
type zkTarget struct {
	procs []*exec.Cmd
	conns []*zk.Conn
	data  []byte
}

const zkParent = "/federationstore/applications"

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// Ensemble is a 3-server ZooKeeper ensemble on loopback, each server its
// own JVM, with fsync on (forceSync=yes, ZooKeeper's default). The router
// bench runs Hadoop's Router over one.
type Ensemble struct {
	ClientAddrs []string
	Procs       []*exec.Cmd
}

// StartZooKeeperEnsemble starts the three servers (data and logs under
// dir) and returns once they are started; callers wait for a quorum by
// retrying their first request.
func StartZooKeeperEnsemble(java, classpath, dir string) (*Ensemble, error) {
	if _, err := exec.LookPath(java); err != nil {
		return nil, fmt.Errorf("java not found (install Debian's zookeeper package): %w", err)
	}
	if jar := strings.Split(classpath, ":"); len(jar) > 0 {
		if _, err := os.Stat(jar[len(jar)-1]); err != nil {
			return nil, fmt.Errorf("ZooKeeper classpath: %w (apt-get install zookeeper)", err)
		}
	}
	e := &Ensemble{}
	var servers []string
	for i := 1; i <= 3; i++ {
		var ports []string
		for j := 0; j < 3; j++ {
			a, err := FreeAddr()
			if err != nil {
				return nil, err
			}
			ports = append(ports, a[strings.LastIndex(a, ":")+1:])
		}
		e.ClientAddrs = append(e.ClientAddrs, "127.0.0.1:"+ports[0])
		servers = append(servers, fmt.Sprintf("server.%d=127.0.0.1:%s:%s", i, ports[1], ports[2]))
	}
	for i := 1; i <= 3; i++ {
		zdir := filepath.Join(dir, fmt.Sprintf("zk%d", i))
		if err := os.MkdirAll(zdir, 0o700); err != nil {
			e.Close()
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(zdir, "myid"), []byte(fmt.Sprint(i)), 0o600); err != nil {
			e.Close()
			return nil, err
		}
		port := e.ClientAddrs[i-1][strings.LastIndex(e.ClientAddrs[i-1], ":")+1:]
		// forceSync=yes (the default) fsyncs the transaction log, like
		// our Raft log.
		conf := fmt.Sprintf("tickTime=500\ninitLimit=20\nsyncLimit=10\ndataDir=%s\nclientPort=%s\nclientPortAddress=127.0.0.1\n"+
			"maxClientCnxns=0\nadmin.enableServer=false\nforceSync=yes\n%s\n", zdir, port, strings.Join(servers, "\n"))
		cfgPath := filepath.Join(zdir, "zoo.cfg")
		if err := os.WriteFile(cfgPath, []byte(conf), 0o600); err != nil {
			e.Close()
			return nil, err
		}
		logf, err := os.Create(filepath.Join(zdir, "server.log"))
		if err != nil {
			e.Close()
			return nil, err
		}
		cmd := exec.Command(java, "-Xmx512m", "-cp", classpath, "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfgPath)
		if err := startInGroup(cmd, logf); err != nil {
			e.Close()
			return nil, err
		}
		e.Procs = append(e.Procs, cmd)
	}
	return e, nil
}

// Close kills the servers.
func (e *Ensemble) Close() {
	for _, p := range e.Procs {
		if p.Process != nil {
			p.Process.Kill()
			p.Wait()
		}
	}
}

func startZooKeeper(ctx context.Context, cfg Config) (target, error) {
	ens, err := StartZooKeeperEnsemble(cfg.Java, cfg.ZKClasspath, cfg.Dir)
	if err != nil {
		return nil, err
	}
	t := &zkTarget{procs: ens.Procs}
	clientAddrs := ens.ClientAddrs
	for i := 0; i < max(cfg.Conns, 1); i++ {
		// Each connection pinned to one server, spread over the ensemble.
		c, _, err := zk.Connect([]string{clientAddrs[i%3]}, 10*time.Second, zk.WithLogger(quietLogger{}), zk.WithLogInfo(false))
		if err != nil {
			t.close()
			return nil, err
		}
		t.conns = append(t.conns, c)
	}
	// Wait for a quorum: creating the parents succeeds.
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := t.ensure("/federationstore")
		if err == nil {
			err = t.ensure(zkParent)
		}
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.close()
			return nil, fmt.Errorf("ZooKeeper ensemble not serving: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.data, _ = proto.Marshal(&pb.ApplicationHome{ApplicationId: appID(0, 0), HomeSubClusterId: "SC-1", CreateTimeMs: time.Now().UnixMilli()})
	slog.Default().Debug("zookeeper ensemble up", "servers", clientAddrs)
	return t, nil
}

func (t *zkTarget) ensure(path string) error {
	_, err := t.conns[0].Create(path, nil, 0, zk.WorldACL(zk.PermAll))
	if errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	return err
}

func (t *zkTarget) insert(_ context.Context, conn int, id string) error {
	c := t.conns[conn]
	_, err := c.Create(zkParent+"/"+id, t.data, 0, zk.WorldACL(zk.PermAll))
	if errors.Is(err, zk.ErrNodeExists) {
		_, _, err = c.Get(zkParent + "/" + id)
	}
	return err
}

func (t *zkTarget) get(_ context.Context, conn int, id string, stale bool) error {
	c := t.conns[conn]
	if !stale {
		if _, err := c.Sync(zkParent + "/" + id); err != nil {
			return err
		}
	}
	_, _, err := c.Get(zkParent + "/" + id)
	return err
}

// serverCPU sums the CPU time of the ZooKeeper JVMs.
func (t *zkTarget) serverCPU() time.Duration { return procCPU(t.procs) }

func (t *zkTarget) serverRSS() int64 { return procRSS(t.procs) }

// procCPU sums the CPU time of child processes.
func procCPU(procs []*exec.Cmd) time.Duration {
	var total time.Duration
	for _, p := range procs {
		if p.Process != nil {
			total += procstat.CPU(p.Process.Pid)
		}
	}
	return total
}

// procRSS sums the resident memory of child processes.
func procRSS(procs []*exec.Cmd) int64 {
	var total int64
	for _, p := range procs {
		if p.Process != nil {
			cur, _ := procstat.RSS(p.Process.Pid)
			total += cur
		}
	}
	return total
}

func (t *zkTarget) close() {
	for _, c := range t.conns {
		c.Close()
	}
	for _, p := range t.procs {
		if p.Process != nil {
			p.Process.Kill()
			p.Wait()
		}
	}
}

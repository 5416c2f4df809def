// Command ipctestserver runs a hadoopipc server on loopback for tests that
// must keep our protobuf registrations out of their own binary (the
// colinmarc/hdfs peer test: both register hadoop.common messages).
//
// It prints "listening ADDR" once serving, shuts down gracefully when stdin
// closes, then prints the server's counters as "metric{labels} value" lines
// and "done".
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ipctestserver:", err)
		os.Exit(1)
	}
}

func run(stdin io.Reader, stdout io.Writer) error {
	reg := prometheus.NewRegistry()
	cfg := hadoopipc.DefaultServerConfig()
	cfg.Registerer = reg
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv := hadoopipc.NewServer(cfg)
	err := srv.Register(hadoopipc.Protocol{
		Name:    "org.yarnfed.test.EchoProtocolPB",
		Version: 1,
		Methods: []hadoopipc.Method{hadoopipc.NewMethod("echo",
			func() *commonpb.GetDelegationTokenRequestProto { return &commonpb.GetDelegationTokenRequestProto{} },
			func(ctx context.Context, req *commonpb.GetDelegationTokenRequestProto) (*commonpb.GetDelegationTokenResponseProto, error) {
				return &commonpb.GetDelegationTokenResponseProto{Token: &commonpb.TokenProto{
					Identifier: []byte{}, Password: []byte{}, Kind: proto.String(req.GetRenewer()), Service: proto.String(""),
				}}, nil
			})},
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "listening %s\n", ln.Addr())

	io.Copy(io.Discard, bufio.NewReader(stdin)) // until the test closes stdin
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		return err
	}
	<-served

	families, err := reg.Gather()
	if err != nil {
		return err
	}
	var lines []string
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			var v float64
			switch {
			case m.Counter != nil:
				v = m.GetCounter().GetValue()
			case m.Gauge != nil:
				v = m.GetGauge().GetValue()
			default:
				continue
			}
			lines = append(lines, fmt.Sprintf("%s{%s} %g", f.GetName(), strings.Join(labels, ","), v))
		}
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Fprintln(stdout, l)
	}
	fmt.Fprintln(stdout, "done")
	return nil
}

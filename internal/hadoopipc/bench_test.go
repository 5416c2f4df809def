package hadoopipc

import (
	"bufio"
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// Benchmarks: a trivial handler (echo) over loopback. Run with
//
//	go test -run='^$' -bench=. -benchmem ./internal/hadoopipc/
//
// BenchmarkRawRoundTrip is the baseline: the same request and reply bytes
// bounced over a bare TCP connection with no IPC layer at all.

func benchServer(b *testing.B) string {
	cfg := DefaultServerConfig()
	ts := startServer(b, cfg, echoProtocol(nil))
	return ts.addr
}

func reportRate(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

func BenchmarkCall(b *testing.B) {
	addr := benchServer(b)
	req := &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("r")}
	b.Run("sequential/conns=1", func(b *testing.B) {
		c := newTestClient(b, ClientConfig{Addresses: []string{addr}})
		resp := &commonpb.GetDelegationTokenResponseProto{}
		if err := c.Call(context.Background(), "echo", req, resp); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := c.Call(context.Background(), "echo", req, resp); err != nil {
				b.Fatal(err)
			}
		}
		reportRate(b)
	})
	for _, conns := range []int{1, 16} {
		b.Run("parallel/conns="+itoa(conns), func(b *testing.B) {
			clients := make([]*Client, conns)
			for i := range clients {
				// A pool per client: one connection each.
				clients[i] = newTestClient(b, ClientConfig{Addresses: []string{addr}, Pool: NewPool()})
				if err := clients[i].Call(context.Background(), "echo", req, &commonpb.GetDelegationTokenResponseProto{}); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { clients[i].pool.Close() })
			}
			var next atomic.Int32
			b.SetParallelism(16) // 16 x GOMAXPROCS callers pipelining
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				c := clients[int(next.Add(1))%conns]
				resp := &commonpb.GetDelegationTokenResponseProto{}
				for pb.Next() {
					if err := c.Call(context.Background(), "echo", req, resp); err != nil {
						b.Error(err)
						return
					}
				}
			})
			reportRate(b)
		})
	}
}

// BenchmarkRawRoundTrip: the baseline. A bare TCP echo of the golden call
// and reply bytes, one round trip per op, no decoding.
func BenchmarkRawRoundTrip(b *testing.B) {
	call := unhex(b, goldenCall)
	reply := unhex(b, goldenReply)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				br := bufio.NewReader(nc)
				buf := make([]byte, len(call))
				for {
					if _, err := io.ReadFull(br, buf); err != nil {
						return
					}
					if _, err := nc.Write(reply); err != nil {
						return
					}
				}
			}()
		}
	}()
	roundTrip := func(b *testing.B, nc net.Conn, br *bufio.Reader, buf []byte) {
		if _, err := nc.Write(call); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(br, buf); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("sequential/conns=1", func(b *testing.B) {
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		br, buf := bufio.NewReader(nc), make([]byte, len(reply))
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			roundTrip(b, nc, br, buf)
		}
		reportRate(b)
	})
	b.Run("parallel/conns=16", func(b *testing.B) {
		// One connection per caller (raw TCP cannot multiplex): 16 callers.
		b.SetParallelism(8)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			nc, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Error(err)
				return
			}
			defer nc.Close()
			br, buf := bufio.NewReader(nc), make([]byte, len(reply))
			for pb.Next() {
				roundTrip(b, nc, br, buf)
			}
		})
		reportRate(b)
	})
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

package hadoopipc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestBatchWriterConcurrentPackets: packets from many goroutines arrive
// whole, each exactly once, and transform runs in wire order, also when
// senders yield before flushing.
func TestBatchWriterConcurrentPackets(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	var failed atomic.Int32
	w := newBatchWriter(a, 0, func(error) { failed.Add(1) })
	var seq uint32 // touched only by transform, under w.mu
	stamp := func(p []byte) ([]byte, error) {
		seq++
		return binary.BigEndian.AppendUint32(append([]byte(nil), p...), seq), nil
	}
	const goroutines, each = 20, 50
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				body := bytes.Repeat([]byte{byte(g)}, 1+(g*7+i)%300)
				p := binary.BigEndian.AppendUint32(nil, uint32(len(body)+4))
				// Half the senders yield before flushing (sendMaybeBatched).
				if err := w.sendMaybeBatched(append(p, body...), stamp, i%10 == 0, g%2 == 0); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	go func() { wg.Wait(); a.Close() }()
	var n int
	var want uint32 = 1
	for {
		frame, err := readFrame(b, 1<<20, nil)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, s := frame[:len(frame)-4], binary.BigEndian.Uint32(frame[len(frame)-4:])
		if s != want {
			t.Fatalf("packet %d carries sequence %d: transform out of wire order", want, s)
		}
		want++
		for _, c := range body {
			if c != body[0] {
				t.Fatalf("packet %d interleaved with another", s)
			}
		}
		n++
	}
	if n != goroutines*each || failed.Load() != 0 {
		t.Fatalf("%d packets arrived, %d write failures", n, failed.Load())
	}
}

func TestBatchWriterFailure(t *testing.T) {
	a, b := net.Pipe()
	b.Close()
	var calls atomic.Int32
	w := newBatchWriter(a, 0, func(error) { calls.Add(1) })
	if err := w.send([]byte("x"), nil, true); err == nil {
		t.Fatal("write to a closed pipe succeeded")
	}
	if err := w.send([]byte("y"), nil, false); err == nil {
		t.Fatal("send after failure succeeded")
	}
	if calls.Load() != 1 {
		t.Fatalf("onError called %d times", calls.Load())
	}
}

// fakeCountingConn is a fake net.Conn that never blocks and counts Write
// calls (the syscalls a real socket would make).
type fakeCountingConn struct {
	net.Conn
	mu     sync.Mutex
	writes int
	data   bytes.Buffer
}

func (c *fakeCountingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	return c.data.Write(p)
}

// TestBatchWriterYieldJoinsRunnableSenders: a sender that knows others are
// in flight yields before its write, so a reply that is already runnable
// shares the syscall; without the hint each goes out alone. GOMAXPROCS 1
// makes "already runnable" deterministic.
func TestBatchWriterYieldJoinsRunnableSenders(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	try := func(others bool) (writes int) {
		c := &fakeCountingConn{}
		w := newBatchWriter(c, 0, func(error) {})
		done := make(chan struct{})
		go func() { // runnable, not yet running
			defer close(done)
			w.send([]byte("second"), nil, false)
		}()
		w.sendMaybeBatched([]byte("first"), nil, false, others)
		<-done
		c.mu.Lock()
		defer c.mu.Unlock()
		if got := c.data.String(); got != "firstsecond" {
			t.Fatalf("wire carries %q", got)
		}
		return c.writes
	}
	for range 10 {
		if n := try(false); n != 2 {
			t.Fatalf("without the hint: %d writes, want 2 (one per packet)", n)
		}
	}
	joined := 0
	for range 20 {
		if try(true) == 1 {
			joined++
		}
	}
	// The race detector randomizes scheduling a little: most tries, not all.
	if joined < 10 {
		t.Fatalf("with the hint only %d of 20 tries shared one write", joined)
	}
}

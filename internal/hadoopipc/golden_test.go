package hadoopipc

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"net"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// Golden bytes, written out by hand from the wire layout (REFERENCE
// section 1), not produced by our encoder. Spaces and | separate fields.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "|", "", "\n", "", "\t", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const (
	goldenClientID = "30313233343536373839616263646566"                               // "0123456789abcdef"
	goldenProtocol = "6f72672e7961726e6665642e746573742e4563686f50726f746f636f6c5042" // testProtocol, 31 bytes
)

var (
	goldenPreambleSimple = "68727063 09 00 00" // "hrpc", version 9, service class 0, auth none

	goldenContext = "00000046" + // packet length 70
		"1a" + "0802 1000 1805 2210" + goldenClientID + "2801" + // RpcRequestHeaderProto: kind PB, op final, callId sint32 -3, clientId, retry sint32 -1
		"2a" + "1207 0a05616c696365" + "1a1f" + goldenProtocol // IpcConnectionContextProto: userInfo{effectiveUser "alice"}, protocol

	goldenCall = "00000049" + // packet length 73
		"1a" + "0802 1000 1800 2210" + goldenClientID + "2800" + // callId 0, retry 0
		"29" + "0a046563686f" + "121f" + goldenProtocol + "1801" + // RequestHeaderProto: "echo", protocol, version 1
		"03" + "0a0172" // GetDelegationTokenRequestProto{renewer "r"}

	goldenReply = "0000002c" + // packet length 44
		"1a" + "0800 1000 1809 3a10" + goldenClientID + "4000" + // RpcResponseHeaderProto: callId 0, SUCCESS, server version 9, clientId echo, retry 0
		"10" + "0a0e" + "0a00 1200 1a0172 2205616c696365" // GetDelegationTokenResponseProto{token{"", "", "r", "alice"}}

	goldenPreambleSASL = "68727063 09 00 df"
	goldenNegotiate    = "0000000e" +
		"0a" + "0802 1000 1841 2200 2801" + // callId sint32 -33, empty clientId, retry -1
		"02" + "1001" // RpcSaslProto{state NEGOTIATE}
	// A SIMPLE-only server answers NEGOTIATE with SUCCESS ("go simple").
	goldenNegotiateReply = "00000012" +
		"0e" + "08dfffffff0f 1000 1809 3a00 4001" + // callId uint32 -33 (5-byte varint), SUCCESS, v9, empty clientId, retry -1
		"02" + "1000" // RpcSaslProto{state SUCCESS}
)

// TestGoldenServer: the golden handshake and call, sent as raw bytes, get
// exactly the golden reply.
func TestGoldenServer(t *testing.T) {
	ts := startServer(t, DefaultServerConfig(), echoProtocol(nil))
	r := dialRaw(t, ts.addr)
	r.write(unhex(t, goldenPreambleSimple+goldenContext+goldenCall))
	want := unhex(t, goldenReply)
	got := make([]byte, len(want))
	if _, err := io.ReadFull(r.br, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("reply\n got %x\nwant %x", got, want)
	}

	r2 := dialRaw(t, ts.addr)
	r2.write(unhex(t, goldenPreambleSASL+goldenNegotiate))
	want = unhex(t, goldenNegotiateReply)
	got = make([]byte, len(want))
	if _, err := io.ReadFull(r2.br, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("negotiate reply\n got %x\nwant %x", got, want)
	}
}

// TestGoldenClient: our client sends exactly the golden bytes and decodes
// the golden reply.
func TestGoldenClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sent := make(chan []byte, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			sent <- nil
			return
		}
		defer nc.Close()
		want := len(unhex(t, goldenPreambleSimple+goldenContext+goldenCall))
		buf := make([]byte, want)
		if _, err := io.ReadFull(nc, buf); err != nil {
			sent <- nil
			return
		}
		sent <- buf
		nc.Write(unhex(t, goldenReply))
		io.Copy(io.Discard, nc)
	}()
	pool := NewPool()
	pool.clientID = []byte("0123456789abcdef")
	defer pool.Close()
	c := newTestClient(t, ClientConfig{Addresses: []string{ln.Addr().String()}, User: "alice", Pool: pool, FailoverAttempts: 1})
	resp := &commonpb.GetDelegationTokenResponseProto{}
	if err := c.Call(context.Background(), "echo", &commonpb.GetDelegationTokenRequestProto{Renewer: proto.String("r")}, resp); err != nil {
		t.Fatal(err)
	}
	if got, want := <-sent, unhex(t, goldenPreambleSimple+goldenContext+goldenCall); !bytes.Equal(got, want) {
		t.Errorf("client sent\n got %x\nwant %x", got, want)
	}
	if resp.GetToken().GetKind() != "r" || resp.GetToken().GetService() != "alice" {
		t.Errorf("decoded reply %v", resp)
	}
}

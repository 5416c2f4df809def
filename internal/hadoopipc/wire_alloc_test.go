package hadoopipc

import (
	"testing"

	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// TestHeaderDecodersDoNotAllocate: the hand-written header codecs exist to
// spare a small call protobuf's per-field allocations; decoding the
// request headers a call carries allocates nothing (the response header
// only its strings, which an error reply needs).
func TestHeaderDecodersDoNotAllocate(t *testing.T) {
	clientID := []byte("0123456789abcdef")
	req := appendReqHeader(nil, 7, clientID, 2)
	req = appendRequestHeader(req, "getApplicationReport", "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB", 1)
	resp := appendRespHeader(nil, 7, nil, clientID, 2, true)
	errResp := appendRespHeader(nil, 7, &RemoteError{Class: "java.io.IOException", Message: "no", Code: commonpb.RpcResponseHeaderProto_ERROR_APPLICATION}, clientID, 2, true)
	for _, tc := range []struct {
		name   string
		decode func() error
		max    float64
	}{
		{"RpcRequestHeaderProto+RequestHeaderProto", func() error {
			_, rest, err := decodeReqHeader(req)
			if err == nil {
				_, _, _, _, err = decodeRequestHeaderProto(rest)
			}
			return err
		}, 0},
		{"RpcResponseHeaderProto success", func() error { _, _, err := decodeRespHeader(resp); return err }, 0},
		{"RpcResponseHeaderProto error", func() error { _, _, err := decodeRespHeader(errResp); return err }, 2},
	} {
		if err := tc.decode(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := testing.AllocsPerRun(100, func() { _ = tc.decode() }); got > tc.max {
			t.Errorf("%s: %v allocations per decode, want at most %v", tc.name, got, tc.max)
		}
	}
}

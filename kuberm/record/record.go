// Package record is what kuberm stores of an application in the API
// server beyond its pods: the JSON record on the application Secret and the
// submission context's bytes, with the decoders that check both like wire
// input (anyone who may edit Secrets in the namespace writes them too).
//
// It is a package of its own so that its fuzz targets link no Kubernetes
// client: a fuzz build instruments every package its test binary links, and
// client-go's instrumented build was most of CI's fuzz smoke (deploy/DESIGN.md).
package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// AMRegistration is what a registered AM told kuberm.
type AMRegistration struct {
	Host        string `json:"host"`
	RPCPort     int32  `json:"rpcPort"`
	TrackingURL string `json:"trackingUrl,omitempty"`
	Time        int64  `json:"time"`
}

// Limits on what a client can make us store. A Secret holds at most 1 MiB;
// these keep an application well inside it.
const (
	MaxSubmissionBytes = 512 << 10
	MaxRecordBytes     = 64 << 10
	MaxTags            = 10 // Hadoop's yarn.resourcemanager.application-tag limit
	MaxTagLen          = 100
	MaxNameLen         = 1024
)

// ErrBad is wrapped by every failure to read what kuberm stored.
var ErrBad = errors.New("kuberm: bad application record")

// App is what kuberm knows of an application beyond its pods, stored
// as JSON in the Secret's AnnotationRecord. State and FinalStatus are set
// only once the application is over (killed, or its last attempt ended):
// until then the state is read from the pods.
type App struct {
	User        string   `json:"user"`
	Queue       string   `json:"queue"`
	Name        string   `json:"name"`
	Type        string   `json:"type"`
	Tags        []string `json:"tags,omitempty"`
	Priority    int32    `json:"priority"`
	SubmitTime  int64    `json:"submitTime"`
	MaxAttempts int32    `json:"maxAttempts"`
	MemoryMB    int64    `json:"memoryMB"`
	VCores      int32    `json:"vcores"`
	Unmanaged   bool     `json:"unmanaged,omitempty"`
	Batch       bool     `json:"batch,omitempty"` // pods request kubernetes.io/batch-*
	Digest      string   `json:"digest"`
	// AMRegistration is an unmanaged AM's registration (it has no pod to
	// carry one): set by registerApplicationMaster (unmanaged.go).
	AMRegistration *AMRegistration `json:"AMRegistration,omitempty"`
	// ContainerSeq is the highest container sequence reserved (alloc.go's
	// nextSeq): ids above it were never handed out.
	ContainerSeq int64 `json:"containerSeq,omitempty"`

	State       yarnpb.YarnApplicationStateProto   `json:"state,omitempty"`
	FinalStatus yarnpb.FinalApplicationStatusProto `json:"finalStatus,omitempty"`
	Diagnostics string                             `json:"diagnostics,omitempty"`
	FinishTime  int64                              `json:"finishTime,omitempty"`
}

func (r *App) Final() bool {
	switch r.State {
	case yarnpb.YarnApplicationStateProto_FINISHED, yarnpb.YarnApplicationStateProto_FAILED, yarnpb.YarnApplicationStateProto_KILLED:
		return true
	}
	return false
}

func Encode(r *App) string {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // plain fields always marshal
	}
	return string(b)
}

// Decode reads a Secret's record. Anyone who may edit Secrets in
// the namespace writes it too, so it is checked like wire input.
func Decode(s string) (App, error) {
	var r App
	if len(s) > MaxRecordBytes {
		return App{}, fmt.Errorf("%w: %d bytes, more than %d", ErrBad, len(s), MaxRecordBytes)
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return App{}, fmt.Errorf("%w: %v", ErrBad, err)
	}
	if dec.More() {
		return App{}, fmt.Errorf("%w: trailing data", ErrBad)
	}
	switch {
	case r.MemoryMB < 0 || r.VCores < 0 || r.ContainerSeq < 0:
		return App{}, fmt.Errorf("%w: negative resource", ErrBad)
	case r.MaxAttempts < 1:
		return App{}, fmt.Errorf("%w: maxAttempts %d", ErrBad, r.MaxAttempts)
	case len(r.Tags) > MaxTags:
		return App{}, fmt.Errorf("%w: %d tags", ErrBad, len(r.Tags))
	case r.State != 0 && yarnpb.YarnApplicationStateProto_name[int32(r.State)] == "":
		return App{}, fmt.Errorf("%w: state %d", ErrBad, r.State)
	case r.FinalStatus != 0 && yarnpb.FinalApplicationStatusProto_name[int32(r.FinalStatus)] == "":
		return App{}, fmt.Errorf("%w: final status %d", ErrBad, r.FinalStatus)
	}
	return r, nil
}

// submission reads the Secret's stored submission context.
func DecodeSubmission(b []byte) (*yarnpb.ApplicationSubmissionContextProto, error) {
	if len(b) > MaxSubmissionBytes {
		return nil, fmt.Errorf("%w: submission of %d bytes", ErrBad, len(b))
	}
	sc := &yarnpb.ApplicationSubmissionContextProto{}
	if err := proto.Unmarshal(b, sc); err != nil {
		return nil, fmt.Errorf("%w: submission: %v", ErrBad, err)
	}
	if sc.ApplicationId == nil {
		return nil, fmt.Errorf("%w: submission without an application id", ErrBad)
	}
	return sc, nil
}

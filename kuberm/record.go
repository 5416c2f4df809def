package kuberm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"

	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// What kuberm writes into the Kubernetes API. Everything a restarted
// kuberm needs is here (DESIGN.md, "State lives in the API server").
const (
	// LabelSubCluster marks every object of one kuberm: its sub-cluster id.
	LabelSubCluster = "yarnfed.io/kuberm"
	// LabelApplication is the application id (application_<ts>_<seq>).
	LabelApplication = "yarnfed.io/application-id"
	// LabelAttempt is the attempt number of an AM pod.
	LabelAttempt = "yarnfed.io/attempt"
	// LabelRole is "am" for AM pods.
	LabelRole = "yarnfed.io/role"
	// RoleAM is LabelRole's value on AM pods.
	RoleAM = "am"
	// AnnotationRecord on the application Secret is the JSON appRecord.
	AnnotationRecord = "yarnfed.io/application"
	// AnnotationDigest is the SHA-256 of the submission context's bytes, on
	// the Secret and each of its pods.
	AnnotationDigest = "yarnfed.io/submission-digest"
	// AnnotationRetired on an AM pod says its application is over and its
	// launch Secret (the application's credentials) deleted.
	AnnotationRetired = "yarnfed.io/retired"
	// AnnotationContainerID is the YARN ContainerId a pod runs.
	AnnotationContainerID = "yarnfed.io/container-id"
	// SecretType is the type of application Secrets.
	SecretType corev1.SecretType = "yarnfed.io/application"
	// DataSubmission is the Secret key holding the serialized
	// ApplicationSubmissionContextProto (launch context and its tokens).
	DataSubmission = "submission"
	// LabelKoordQoS with value "BE" makes a pod best-effort batch for
	// Koordinator.
	LabelKoordQoS = "koordinator.sh/qosClass"
	// amContainerName is the AM container's name in its pod.
	amContainerName = "am"
)

// Limits on what a client can make us store. A Secret holds at most 1 MiB;
// these keep an application well inside it.
const (
	maxSubmissionBytes = 512 << 10
	maxRecordBytes     = 64 << 10
	maxTags            = 10 // Hadoop's yarn.resourcemanager.application-tag limit
	maxTagLen          = 100
	maxNameLen         = 1024
)

// ErrBadRecord is wrapped by every failure to read what kuberm stored.
var ErrBadRecord = errors.New("kuberm: bad application record")

// appRecord is what kuberm knows of an application beyond its pods, stored
// as JSON in the Secret's AnnotationRecord. State and FinalStatus are set
// only once the application is over (killed, or its last attempt ended):
// until then the state is read from the pods.
type appRecord struct {
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
	AMRegistration *amRegistration `json:"amRegistration,omitempty"`
	// ContainerSeq is the highest container sequence reserved (alloc.go's
	// nextSeq): ids above it were never handed out.
	ContainerSeq int64 `json:"containerSeq,omitempty"`

	State       yarnpb.YarnApplicationStateProto   `json:"state,omitempty"`
	FinalStatus yarnpb.FinalApplicationStatusProto `json:"finalStatus,omitempty"`
	Diagnostics string                             `json:"diagnostics,omitempty"`
	FinishTime  int64                              `json:"finishTime,omitempty"`
}

func (r *appRecord) final() bool {
	switch r.State {
	case yarnpb.YarnApplicationStateProto_FINISHED, yarnpb.YarnApplicationStateProto_FAILED, yarnpb.YarnApplicationStateProto_KILLED:
		return true
	}
	return false
}

func encodeRecord(r *appRecord) string {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // plain fields always marshal
	}
	return string(b)
}

// decodeRecord reads a Secret's record. Anyone who may edit Secrets in
// the namespace writes it too, so it is checked like wire input.
func decodeRecord(s string) (appRecord, error) {
	var r appRecord
	if len(s) > maxRecordBytes {
		return appRecord{}, fmt.Errorf("%w: %d bytes, more than %d", ErrBadRecord, len(s), maxRecordBytes)
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return appRecord{}, fmt.Errorf("%w: %v", ErrBadRecord, err)
	}
	if dec.More() {
		return appRecord{}, fmt.Errorf("%w: trailing data", ErrBadRecord)
	}
	switch {
	case r.MemoryMB < 0 || r.VCores < 0 || r.ContainerSeq < 0:
		return appRecord{}, fmt.Errorf("%w: negative resource", ErrBadRecord)
	case r.MaxAttempts < 1:
		return appRecord{}, fmt.Errorf("%w: maxAttempts %d", ErrBadRecord, r.MaxAttempts)
	case len(r.Tags) > maxTags:
		return appRecord{}, fmt.Errorf("%w: %d tags", ErrBadRecord, len(r.Tags))
	case r.State != 0 && yarnpb.YarnApplicationStateProto_name[int32(r.State)] == "":
		return appRecord{}, fmt.Errorf("%w: state %d", ErrBadRecord, r.State)
	case r.FinalStatus != 0 && yarnpb.FinalApplicationStatusProto_name[int32(r.FinalStatus)] == "":
		return appRecord{}, fmt.Errorf("%w: final status %d", ErrBadRecord, r.FinalStatus)
	}
	return r, nil
}

// submission reads the Secret's stored submission context.
func decodeSubmission(b []byte) (*yarnpb.ApplicationSubmissionContextProto, error) {
	if len(b) > maxSubmissionBytes {
		return nil, fmt.Errorf("%w: submission of %d bytes", ErrBadRecord, len(b))
	}
	sc := &yarnpb.ApplicationSubmissionContextProto{}
	if err := proto.Unmarshal(b, sc); err != nil {
		return nil, fmt.Errorf("%w: submission: %v", ErrBadRecord, err)
	}
	if sc.ApplicationId == nil {
		return nil, fmt.Errorf("%w: submission without an application id", ErrBadRecord)
	}
	return sc, nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// namePrefix makes object names unique per sub-cluster, so kuberms that
// share a namespace never collide on a name even with equal application
// ids: the sub-cluster id lowercased with every other character a '-'
// (names are DNS subdomains), cut to 40, plus 6 hex digits of a hash of
// the exact id (SC_1 and SC-1 differ).
func namePrefix(subCluster string) string {
	b := []byte(strings.ToLower(subCluster))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			b[i] = '-'
		}
	}
	if len(b) > 40 {
		b = b[:40]
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(subCluster))
	return strings.Trim(string(b), "-") + "-" + fmt.Sprintf("%06x", h.Sum32()&0xffffff)
}

// objectName is the name of an application's Secret:
// <prefix>-application-1700000000000-0001.
func (r *RM) objectName(id yarnid.AppID) string {
	return r.prefix + "-" + strings.ReplaceAll(id.String(), "_", "-")
}

func (r *RM) amPodName(id yarnid.AppID, attempt int32) string {
	return r.objectName(id) + "-am-" + strconv.Itoa(int(attempt))
}

// amContainerID is the AM container of an attempt: sequence 1, as an RM's
// first allocation of the attempt is.
func (r *RM) amContainerID(at yarnid.AttemptID) yarnid.ContainerID {
	return yarnid.NewContainerID(at, r.epoch, 1)
}

// podAttempt reads an AM pod's application and attempt from its labels.
// Container pods carry both labels too but are no attempt.
func podAttempt(p *corev1.Pod) (yarnid.AttemptID, bool) {
	if p.Labels[LabelRole] == RoleContainer {
		return yarnid.AttemptID{}, false
	}
	app, err := yarnid.ParseAppID(p.Labels[LabelApplication])
	if err != nil {
		return yarnid.AttemptID{}, false
	}
	n, err := strconv.ParseInt(p.Labels[LabelAttempt], 10, 32)
	if err != nil || n < 1 {
		return yarnid.AttemptID{}, false
	}
	return yarnid.AttemptID{App: app, Attempt: int32(n)}, true
}

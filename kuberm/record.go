package kuberm

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/kuberm/record"
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
	// AnnotationRecord on the application Secret is the JSON record.App.
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

// ErrBadRecord is wrapped by every failure to read what kuberm stored.
var ErrBadRecord = record.ErrBad

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

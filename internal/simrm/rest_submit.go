package simrm

import (
	"encoding/json"
	"encoding/xml"
	"net/http"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// POST /ws/v1/cluster/apps: RMWebServices.submitApplication. The body
// (ApplicationSubmissionContextInfo, JSON or XML) becomes the protocol's
// submission context and goes through the IPC submit path (submitContext),
// so both surfaces validate alike. As in Hadoop: 202 Accepted with Location
// <request URL>/<app id>; a YarnException from the submit is a 400
// BadRequestException with its message. simrm launches no containers, so
// am-container-spec (commands, local resources) is accepted and ignored.

// submitInfo holds the fields of ApplicationSubmissionContextInfo simrm uses.
type submitInfo struct {
	XMLName        xml.Name `json:"-" xml:"application-submission-context"`
	AppID          string   `json:"application-id" xml:"application-id"`
	Name           string   `json:"application-name" xml:"application-name"`
	Queue          string   `json:"queue" xml:"queue"`
	Type           string   `json:"application-type" xml:"application-type"`
	Priority       *int32   `json:"priority" xml:"priority"`
	Unmanaged      bool     `json:"unmanaged-AM" xml:"unmanaged-AM"`
	MaxAttempts    *int32   `json:"max-app-attempts" xml:"max-app-attempts"`
	KeepContainers bool     `json:"keep-containers-across-application-attempts" xml:"keep-containers-across-application-attempts"`
	Resource       *struct {
		Memory int64 `json:"memory" xml:"memory"`
		VCores int32 `json:"vCores" xml:"vCores"`
	} `json:"resource" xml:"resource"`
	Tags        *submitTags `json:"application-tags" xml:"application-tags"`
	AMNodeLabel string      `json:"am-container-node-label-expression" xml:"am-container-node-label-expression"`
}

// submitTags is {"tag":"a"} or {"tag":["a","b"]} (Jackson accepts a single
// value for a list) or repeated <tag> elements.
type submitTags struct {
	Tag []string `xml:"tag"`
}

func (t *submitTags) UnmarshalJSON(b []byte) error {
	var raw struct {
		Tag json.RawMessage `json:"tag"`
	}
	if err := json.Unmarshal(b, &raw); err != nil || len(raw.Tag) == 0 {
		return err
	}
	var one string
	if json.Unmarshal(raw.Tag, &one) == nil {
		t.Tag = []string{one}
		return nil
	}
	return json.Unmarshal(raw.Tag, &t.Tag)
}

func (r *RM) restSubmit(w http.ResponseWriter, req *http.Request) {
	var in submitInfo
	if !decodeREST(w, req, &in) {
		return
	}
	if in.AppID == "" {
		badRequest(w, req, "application-id is required (get one from POST /ws/v1/cluster/apps/new-application)")
		return
	}
	id, err := ParseAppID(in.AppID)
	if err != nil {
		badRequest(w, req, "Invalid ApplicationId: "+in.AppID)
		return
	}
	sc := &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId: appPB(id), UnmanagedAm: proto.Bool(in.Unmanaged),
		KeepContainersAcrossApplicationAttempts: proto.Bool(in.KeepContainers),
		ApplicationName:                         proto.String(in.Name), ApplicationType: proto.String(in.Type),
		MaxAppAttempts: in.MaxAttempts,
	}
	if in.Queue != "" {
		sc.Queue = proto.String(in.Queue)
	}
	if in.Priority != nil {
		sc.Priority = &yarnpb.PriorityProto{Priority: in.Priority}
	}
	if in.Tags != nil {
		sc.ApplicationTags = in.Tags.Tag
	}
	if in.Resource != nil {
		res := &yarnpb.ResourceProto{Memory: proto.Int64(in.Resource.Memory), VirtualCores: proto.Int32(in.Resource.VCores)}
		sc.Resource = res
		sc.AmContainerResourceRequest = []*yarnpb.ResourceRequestProto{{ResourceName: proto.String(AnyResource),
			Capability: res, NumContainers: proto.Int32(1), NodeLabelExpression: proto.String(in.AMNodeLabel)}}
	}
	if err := r.submitContext(sc, callerOf(req)); err != nil {
		badRequest(w, req, err.Error())
		return
	}
	w.Header().Set("Location", "http://"+req.Host+req.URL.Path+"/"+id.String())
	w.WriteHeader(http.StatusAccepted)
}

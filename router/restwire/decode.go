package restwire

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"mime"
	"net/url"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/yarnid"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// Decoders for REST request bodies. Hadoop accepts JSON and XML (by
// Content-Type); unknown fields are ignored as Jackson/JAXB do there, but
// every value we use is validated and errors say which field is wrong.

// submissionContextInfo is ApplicationSubmissionContextInfo: the body of
// POST /ws/v1/cluster/apps.
type submissionContextInfo struct {
	XMLName             xml.Name       `json:"-" xml:"application-submission-context"`
	ApplicationID       string         `json:"application-id" xml:"application-id"`
	ApplicationName     string         `json:"application-name" xml:"application-name"`
	Queue               string         `json:"queue" xml:"queue"`
	Priority            *int32         `json:"priority" xml:"priority"`
	AMContainerSpec     *containerSpec `json:"am-container-spec" xml:"am-container-spec"`
	UnmanagedAM         bool           `json:"unmanaged-AM" xml:"unmanaged-AM"`
	MaxAppAttempts      *int32         `json:"max-app-attempts" xml:"max-app-attempts"`
	Resource            *resourceInfo  `json:"resource" xml:"resource"`
	ApplicationType     string         `json:"application-type" xml:"application-type"`
	KeepContainers      bool           `json:"keep-containers-across-application-attempts" xml:"keep-containers-across-application-attempts"`
	ApplicationTags     *tagList       `json:"application-tags" xml:"application-tags"`
	AttemptFailuresVI   *int64         `json:"attempt-failures-validity-interval" xml:"attempt-failures-validity-interval"`
	ReservationID       string         `json:"reservation-id" xml:"reservation-id"`
	NodeLabelExpression string         `json:"app-node-label-expression" xml:"app-node-label-expression"`
	AMNodeLabel         string         `json:"am-container-node-label-expression" xml:"am-container-node-label-expression"`
}

type resourceInfo struct {
	Memory int64 `json:"memory" xml:"memory"`
	VCores int32 `json:"vCores" xml:"vCores"`
}

type containerSpec struct {
	LocalResources *struct {
		Entry []struct {
			Key   string `json:"key" xml:"key"`
			Value struct {
				Resource   string `json:"resource" xml:"resource"`
				Type       string `json:"type" xml:"type"`
				Visibility string `json:"visibility" xml:"visibility"`
				Size       int64  `json:"size" xml:"size"`
				Timestamp  int64  `json:"timestamp" xml:"timestamp"`
				Pattern    string `json:"pattern" xml:"pattern"`
			} `json:"value" xml:"value"`
		} `json:"entry" xml:"entry"`
	} `json:"local-resources" xml:"local-resources"`
	Environment *kvList `json:"environment" xml:"environment"`
	Commands    *struct {
		Command stringOrList `json:"command" xml:"command"`
	} `json:"commands" xml:"commands"`
}

type kvList struct {
	Entry []struct {
		Key   string `json:"key" xml:"key"`
		Value string `json:"value" xml:"value"`
	} `json:"entry" xml:"entry"`
}

type tagList struct {
	Tag stringOrList `json:"tag" xml:"tag"`
}

// stringOrList accepts "x" or ["x","y"] in JSON (Jackson's
// single-value-as-array) and repeated elements in XML.
type stringOrList []string

func (s *stringOrList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = append(*s, one)
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("want a string or a list of strings")
	}
	*s = append(*s, many...)
	return nil
}

func (s *stringOrList) UnmarshalXML(d *xml.Decoder, start xml.StartElement) error {
	var v string
	if err := d.DecodeElement(&v, &start); err != nil {
		return err
	}
	*s = append(*s, v)
	return nil
}

// isXML reports whether contentType is XML (empty: JSON, as Jersey
// assumes); other types are 415 NotSupportedException.
func isXML(contentType string) (bool, error) {
	if contentType == "" {
		return false, nil
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false, BadRequest("bad Content-Type %q", contentType)
	}
	switch mt {
	case "application/json":
		return false, nil
	case "application/xml", "text/xml":
		return true, nil
	}
	return false, &Error{Status: 415, Class: "javax.ws.rs.NotSupportedException", Err: fmt.Errorf("unsupported Content-Type %q: use application/json or application/xml", mt)}
}

// DecodeBody decodes body into v as JSON or XML by contentType; a
// malformed body is a 400.
func DecodeBody(contentType string, body []byte, v any) error {
	x, err := isXML(contentType)
	if err != nil {
		return err
	}
	if x {
		if err := xml.NewDecoder(bytes.NewReader(body)).Decode(v); err != nil {
			return BadRequest("invalid XML body: %v", err)
		}
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return BadRequest("invalid JSON body: %v", err)
	}
	return nil
}

// DecodeSubmissionContext decodes and validates a REST submission body into
// the protocol's ApplicationSubmissionContext.
func DecodeSubmissionContext(contentType string, body []byte) (*yarnpb.ApplicationSubmissionContextProto, error) {
	var in submissionContextInfo
	if err := DecodeBody(contentType, body, &in); err != nil {
		return nil, err
	}
	if in.ApplicationID == "" {
		return nil, BadRequest("application-id is required (get one from POST /ws/v1/cluster/apps/new-application)")
	}
	id, err := yarnid.ParseAppIDProto(in.ApplicationID)
	if err != nil {
		return nil, BadRequest("application-id: %v", err)
	}
	asc := &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId: id, UnmanagedAm: proto.Bool(in.UnmanagedAM),
		KeepContainersAcrossApplicationAttempts: proto.Bool(in.KeepContainers),
	}
	if in.ApplicationName != "" {
		asc.ApplicationName = proto.String(in.ApplicationName)
	}
	if in.Queue != "" {
		asc.Queue = proto.String(in.Queue)
	}
	if in.ApplicationType != "" {
		asc.ApplicationType = proto.String(in.ApplicationType)
	}
	if in.Priority != nil {
		asc.Priority = &yarnpb.PriorityProto{Priority: in.Priority}
	}
	if in.MaxAppAttempts != nil {
		if *in.MaxAppAttempts < 0 {
			return nil, BadRequest("max-app-attempts must be >= 0, got %d", *in.MaxAppAttempts)
		}
		asc.MaxAppAttempts = in.MaxAppAttempts
	}
	if in.AttemptFailuresVI != nil {
		asc.AttemptFailuresValidityInterval = in.AttemptFailuresVI
	}
	if in.Resource != nil {
		if in.Resource.Memory < 0 || in.Resource.VCores < 0 {
			return nil, BadRequest("resource: memory and vCores must be >= 0")
		}
		asc.Resource = &yarnpb.ResourceProto{Memory: proto.Int64(in.Resource.Memory), VirtualCores: proto.Int32(in.Resource.VCores)}
	}
	if in.ApplicationTags != nil {
		asc.ApplicationTags = in.ApplicationTags.Tag
	}
	if in.NodeLabelExpression != "" {
		asc.NodeLabelExpression = proto.String(in.NodeLabelExpression)
	}
	if in.ReservationID != "" {
		rid, err := ParseReservationID(in.ReservationID)
		if err != nil {
			return nil, err
		}
		asc.ReservationId = rid
	}
	if spec := in.AMContainerSpec; spec != nil {
		clc := &yarnpb.ContainerLaunchContextProto{}
		if spec.Commands != nil {
			clc.Command = spec.Commands.Command
		}
		if spec.Environment != nil {
			for _, e := range spec.Environment.Entry {
				clc.Environment = append(clc.Environment, &yarnpb.StringStringMapProto{Key: proto.String(e.Key), Value: proto.String(e.Value)})
			}
		}
		if spec.LocalResources != nil {
			for _, e := range spec.LocalResources.Entry {
				lr, err := localResource(e.Key, e.Value.Resource, e.Value.Type, e.Value.Visibility, e.Value.Size, e.Value.Timestamp, e.Value.Pattern)
				if err != nil {
					return nil, err
				}
				clc.LocalResources = append(clc.LocalResources, lr)
			}
		}
		asc.AmContainerSpec = clc
	}
	return asc, nil
}

func localResource(key, resource, typ, vis string, size, ts int64, pattern string) (*yarnpb.StringLocalResourceMapProto, error) {
	if key == "" {
		return nil, BadRequest("local-resources: entry without a key")
	}
	u, err := url.Parse(resource)
	if err != nil || u.Scheme == "" {
		return nil, BadRequest("local-resources %q: resource %q is not an absolute URL", key, resource)
	}
	urlp := &yarnpb.URLProto{Scheme: proto.String(u.Scheme), File: proto.String(u.Path)}
	if h := u.Hostname(); h != "" {
		urlp.Host = proto.String(h)
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseInt(p, 10, 32)
		if err != nil || n < 0 {
			return nil, BadRequest("local-resources %q: bad port in %q", key, resource)
		}
		urlp.Port = proto.Int32(int32(n))
	}
	if u.User != nil {
		urlp.UserInfo = proto.String(u.User.String())
	}
	lr := &yarnpb.LocalResourceProto{Resource: urlp, Size: proto.Int64(size), Timestamp: proto.Int64(ts)}
	t, ok := enumValue(yarnpb.LocalResourceTypeProto_value, typ, "FILE")
	if !ok {
		return nil, BadRequest("local-resources %q: type %q, want ARCHIVE, FILE or PATTERN", key, typ)
	}
	lr.Type = yarnpb.LocalResourceTypeProto(t).Enum()
	v, ok := enumValue(yarnpb.LocalResourceVisibilityProto_value, vis, "APPLICATION")
	if !ok {
		return nil, BadRequest("local-resources %q: visibility %q, want PUBLIC, PRIVATE or APPLICATION", key, vis)
	}
	lr.Visibility = yarnpb.LocalResourceVisibilityProto(v).Enum()
	if pattern != "" {
		lr.Pattern = proto.String(pattern)
	}
	return &yarnpb.StringLocalResourceMapProto{Key: proto.String(key), Value: lr}, nil
}

// enumValue is the protobuf enum value named name in any case, def when
// name is empty; ok is false for a name the enum does not have.
func enumValue(values map[string]int32, name, def string) (v int32, ok bool) {
	if name == "" {
		name = def
	}
	v, ok = values[strings.ToUpper(name)]
	return v, ok
}

// ParseReservationID parses reservation_<ts>_<seq>.
func ParseReservationID(s string) (*yarnpb.ReservationIdProto, error) {
	rest, ok := strings.CutPrefix(s, "reservation_")
	ts, seq, ok2 := strings.Cut(rest, "_")
	t, err1 := strconv.ParseInt(ts, 10, 64)
	n, err2 := strconv.ParseInt(seq, 10, 64)
	if !ok || !ok2 || err1 != nil || err2 != nil || t < 0 || n < 0 {
		return nil, BadRequest("reservation-id %q: want reservation_<timestamp>_<id>", s)
	}
	return &yarnpb.ReservationIdProto{ClusterTimestamp: proto.Int64(t), Id: proto.Int64(n)}, nil
}

// DecodeAppState decodes the body of PUT /apps/{id}/state and returns the
// upper-cased target state.
func DecodeAppState(contentType string, body []byte) (string, error) {
	var st struct {
		XMLName xml.Name `json:"-" xml:"appstate"`
		State   string   `json:"state" xml:"state"`
	}
	if err := DecodeBody(contentType, body, &st); err != nil {
		return "", err
	}
	if st.State == "" {
		return "", BadRequest("state is required")
	}
	return strings.ToUpper(st.State), nil
}

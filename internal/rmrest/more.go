package rmrest

import "encoding/xml"

// Documents of the RM REST endpoints the router merges or checks itself
// (the per-application ones it relays as the home RM sent them). Names
// follow the RM webapp DAOs: AppStatisticsInfo, StatisticsItemInfo,
// NodeLabelsInfo, NodeLabelInfo, PartitionInfo, AppPriority, AppQueue,
// AppTimeoutInfo, NewReservation.

// AppStatInfo is /ws/v1/cluster/appstatistics: application counts by state
// and type.
type AppStatInfo struct {
	XMLName  xml.Name   `json:"-" xml:"appStatInfo"`
	StatItem []StatItem `json:"statItem" xml:"statItem"`
}

// AppStatInfoResponse is the JSON envelope of AppStatInfo.
type AppStatInfoResponse struct {
	AppStatInfo AppStatInfo `json:"appStatInfo"`
}

// StatItem is one (state, type) count; type "*" means every type.
type StatItem struct {
	State string `json:"state" xml:"state"`
	Type  string `json:"type" xml:"type"`
	Count int64  `json:"count" xml:"count"`
}

// NodeLabelsInfo is /ws/v1/cluster/get-node-labels. Its JSON is not
// wrapped in the root element name (the RM lists it among its unwrapped
// documents): {"nodeLabelInfo":[...]}, or {} without labels.
type NodeLabelsInfo struct {
	XMLName       xml.Name        `json:"-" xml:"nodeLabelsInfo"`
	NodeLabelInfo []NodeLabelInfo `json:"nodeLabelInfo,omitempty" xml:"nodeLabelInfo"`
}

// NodeLabelInfo is one cluster node label (partition).
type NodeLabelInfo struct {
	Name          string         `json:"name" xml:"name"`
	Exclusivity   bool           `json:"exclusivity" xml:"exclusivity"`
	PartitionInfo *PartitionInfo `json:"partitionInfo,omitempty" xml:"partitionInfo,omitempty"`
}

// PartitionInfo is what a partition has available.
type PartitionInfo struct {
	ResourceAvailable ResourceInfo `json:"resourceAvailable" xml:"resourceAvailable"`
}

// AppPriority is the body and answer of /apps/{id}/priority.
type AppPriority struct {
	XMLName  xml.Name `json:"-" xml:"applicationpriority"`
	Priority int32    `json:"priority" xml:"priority"`
}

// AppQueue is the body and answer of /apps/{id}/queue.
type AppQueue struct {
	XMLName xml.Name `json:"-" xml:"appqueue"`
	Queue   string   `json:"queue" xml:"queue"`
}

// AppTimeout is one application timeout (/apps/{id}/timeouts/{type}, and
// the body of PUT /apps/{id}/timeout).
type AppTimeout struct {
	XMLName                xml.Name `json:"-" xml:"timeout"`
	Type                   string   `json:"type" xml:"type"`
	ExpiryTime             string   `json:"expiryTime" xml:"expiryTime"`
	RemainingTimeInSeconds int64    `json:"remainingTimeInSeconds" xml:"remainingTimeInSeconds"`
}

// AppTimeoutResponse is the JSON envelope of AppTimeout.
type AppTimeoutResponse struct {
	Timeout AppTimeout `json:"timeout"`
}

// AppTimeouts is /apps/{id}/timeouts.
type AppTimeouts struct {
	XMLName xml.Name     `json:"-" xml:"timeouts"`
	Timeout []AppTimeout `json:"timeout" xml:"timeout"`
}

// AppTimeoutsResponse is the JSON envelope of AppTimeouts.
type AppTimeoutsResponse struct {
	Timeouts AppTimeouts `json:"timeouts"`
}

// NewReservation is the answer of POST /reservation/new-reservation.
type NewReservation struct {
	XMLName       xml.Name `json:"-" xml:"new-reservation"`
	ReservationID string   `json:"reservation-id" xml:"reservation-id"`
}

package rmrest

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// ErrBadQuery reports query parameters the RM answers with
// BadRequestException (HTTP 400).
var ErrBadQuery = errors.New("bad request")

// AppStates are YarnApplicationState names, in Hadoop's order.
var AppStates = []string{"NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING", "FINISHED", "FAILED", "KILLED"}

// FinalStatuses are FinalApplicationStatus names.
var FinalStatuses = []string{"UNDEFINED", "SUCCEEDED", "FAILED", "KILLED", "ENDED"}

// maxQueryValues bounds how many comma-separated values one parameter may
// carry, so a hostile query cannot make the server allocate without limit.
const maxQueryValues = 1024

// AppsQuery is the filter of GET /ws/v1/cluster/apps. Zero values mean "no
// filter"; times are ms since the epoch.
type AppsQuery struct {
	States            []string // upper-case YarnApplicationState names
	FinalStatus       string
	User              string
	Queue             string
	Limit             int64
	StartedTimeBegin  int64
	StartedTimeEnd    int64
	FinishedTimeBegin int64
	FinishedTimeEnd   int64
	ApplicationTypes  []string
	ApplicationTags   []string
	Name              string
	DeSelects         []string
}

// ParseAppsQuery decodes and validates the query parameters of
// GET /apps as RMWebServices does: states (and the deprecated state) are
// case-insensitive YarnApplicationState names, limit must be positive, time
// bounds non-negative with begin <= end.
func ParseAppsQuery(v url.Values) (AppsQuery, error) {
	var q AppsQuery
	var err error
	for _, raw := range append(v["states"], v["state"]...) {
		vals, err := splitList(raw)
		if err != nil {
			return AppsQuery{}, err
		}
		for _, s := range vals {
			up := strings.ToUpper(s)
			if !contains(AppStates, up) {
				return AppsQuery{}, fmt.Errorf("%w: Invalid application-state %s specified. It should be one of %s",
					ErrBadQuery, s, strings.Join(AppStates, ", "))
			}
			if !contains(q.States, up) {
				q.States = append(q.States, up)
			}
		}
	}
	if fs := v.Get("finalStatus"); fs != "" {
		up := strings.ToUpper(fs)
		if !contains(FinalStatuses, up) {
			return AppsQuery{}, fmt.Errorf("%w: Invalid final-status %s specified. It should be one of %s",
				ErrBadQuery, fs, strings.Join(FinalStatuses, ", "))
		}
		q.FinalStatus = up
	}
	q.User, q.Queue, q.Name = v.Get("user"), v.Get("queue"), v.Get("name")
	if s := v.Get("limit"); s != "" {
		if q.Limit, err = strconv.ParseInt(s, 10, 64); err != nil || q.Limit <= 0 {
			return AppsQuery{}, fmt.Errorf("%w: limit value must be greater then 0", ErrBadQuery)
		}
	}
	for _, p := range []struct {
		name string
		dst  *int64
	}{
		{"startedTimeBegin", &q.StartedTimeBegin}, {"startedTimeEnd", &q.StartedTimeEnd},
		{"finishedTimeBegin", &q.FinishedTimeBegin}, {"finishedTimeEnd", &q.FinishedTimeEnd},
	} {
		s := v.Get(p.name)
		if s == "" {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return AppsQuery{}, fmt.Errorf("%w: %s must be greater than 0", ErrBadQuery, p.name)
		}
		*p.dst = n
	}
	if q.StartedTimeEnd > 0 && q.StartedTimeBegin > q.StartedTimeEnd {
		return AppsQuery{}, fmt.Errorf("%w: startedTimeEnd must be greater than startTimeBegin", ErrBadQuery)
	}
	if q.FinishedTimeEnd > 0 && q.FinishedTimeBegin > q.FinishedTimeEnd {
		return AppsQuery{}, fmt.Errorf("%w: finishedTimeEnd must be greater than finishedTimeBegin", ErrBadQuery)
	}
	if q.ApplicationTypes, err = splitAll(v["applicationTypes"]); err != nil {
		return AppsQuery{}, err
	}
	if q.ApplicationTags, err = splitAll(v["applicationTags"]); err != nil {
		return AppsQuery{}, err
	}
	if q.DeSelects, err = splitAll(v["deSelects"]); err != nil {
		return AppsQuery{}, err
	}
	return q, nil
}

// Values encodes q as query parameters (the inverse of ParseAppsQuery).
func (q AppsQuery) Values() url.Values {
	v := url.Values{}
	if len(q.States) > 0 {
		v.Set("states", strings.Join(q.States, ","))
	}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	num := func(k string, n int64) {
		if n != 0 {
			v.Set(k, strconv.FormatInt(n, 10))
		}
	}
	set("finalStatus", q.FinalStatus)
	set("user", q.User)
	set("queue", q.Queue)
	set("name", q.Name)
	num("limit", q.Limit)
	num("startedTimeBegin", q.StartedTimeBegin)
	num("startedTimeEnd", q.StartedTimeEnd)
	num("finishedTimeBegin", q.FinishedTimeBegin)
	num("finishedTimeEnd", q.FinishedTimeEnd)
	if len(q.ApplicationTypes) > 0 {
		v.Set("applicationTypes", strings.Join(q.ApplicationTypes, ","))
	}
	if len(q.ApplicationTags) > 0 {
		v.Set("applicationTags", strings.Join(q.ApplicationTags, ","))
	}
	if len(q.DeSelects) > 0 {
		v.Set("deSelects", strings.Join(q.DeSelects, ","))
	}
	return v
}

// splitList splits a comma-separated value, trimming blanks and dropping
// empty items, as Hadoop's parseQueries does.
func splitList(s string) ([]string, error) {
	if strings.Count(s, ",") >= maxQueryValues {
		return nil, fmt.Errorf("%w: more than %d values in one parameter", ErrBadQuery, maxQueryValues)
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out, nil
}

func splitAll(raw []string) ([]string, error) {
	var out []string
	for _, r := range raw {
		vals, err := splitList(r)
		if err != nil {
			return nil, err
		}
		for _, s := range vals {
			if !contains(out, s) {
				if len(out) >= maxQueryValues {
					return nil, fmt.Errorf("%w: more than %d values in one parameter", ErrBadQuery, maxQueryValues)
				}
				out = append(out, s)
			}
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

package simrm

import (
	"net/http"

	"github.com/yarnfed/yarnfed/internal/rmrest"
)

// One attempt and its containers over REST (RMWebServices' getAppAttempt,
// getContainers, getContainer). Ids that do not parse, or an attempt or
// container id of another application, are 400 BadRequestException; ids
// the RM does not know are 404 NotFoundException, with Hadoop's
// "... with id: X not found" wording.

// attemptFromPath parses {appid} and {attemptid} and checks they belong
// together, answering 400 itself when they do not.
func (r *RM) attemptFromPath(w http.ResponseWriter, req *http.Request) (AttemptID, bool) {
	app, ok := r.appParam(w, req)
	if !ok {
		return AttemptID{}, false
	}
	s := req.PathValue("attemptid")
	at, err := ParseAttemptID(s)
	if err != nil {
		badRequest(w, req, "Invalid AppAttemptId: "+s)
		return AttemptID{}, false
	}
	if at.App != app {
		badRequest(w, req, "appAttemptId "+s+" is not of application "+app.String())
		return AttemptID{}, false
	}
	return at, true
}

func (r *RM) restAttempt(w http.ResponseWriter, req *http.Request) {
	id, ok := r.attemptFromPath(w, req)
	if !ok {
		return
	}
	rep, err := r.core().Attempt(id)
	if err != nil {
		notFound(w, req, "app attempt with id: "+id.String()+" not found")
		return
	}
	out := restAttempt(rep, r.appUser(id.App))
	writeREST(w, req, http.StatusOK, rmrest.AppAttemptResponse{AppAttempt: out}, out)
}

func (r *RM) appUser(id AppID) string {
	if a, err := r.core().AppReport(id); err == nil {
		return a.User
	}
	return ""
}

func (r *RM) restContainers(w http.ResponseWriter, req *http.Request) {
	id, ok := r.attemptFromPath(w, req)
	if !ok {
		return
	}
	cs, err := r.core().Containers(id)
	if err != nil {
		notFound(w, req, "app attempt with id: "+id.String()+" not found")
		return
	}
	out := rmrest.Containers{}
	now := r.core().nowMS()
	for _, c := range cs {
		out.Container = append(out.Container, restContainer(c, now))
	}
	writeREST(w, req, http.StatusOK, rmrest.ContainersResponse{Containers: out}, out)
}

func (r *RM) restContainer(w http.ResponseWriter, req *http.Request) {
	at, ok := r.attemptFromPath(w, req)
	if !ok {
		return
	}
	s := req.PathValue("containerid")
	id, err := ParseContainerID(s)
	if err != nil {
		badRequest(w, req, "Invalid ContainerId: "+s)
		return
	}
	if id.Attempt != at {
		badRequest(w, req, "containerId "+s+" is not of attempt "+at.String())
		return
	}
	c, err := r.core().Container(id)
	if err != nil {
		notFound(w, req, "container with id: "+s+" not found")
		return
	}
	out := restContainer(c, r.core().nowMS())
	writeREST(w, req, http.StatusOK, rmrest.ContainerResponse{Container: out}, out)
}

// restContainer renders a container; a running one's elapsed time runs to
// now, as Hadoop's Times.elapsed does.
func restContainer(c ContainerInfo, now int64) rmrest.Container {
	end := c.Finished
	if end == 0 {
		end = now
	}
	return rmrest.Container{
		ContainerID: c.ID.String(), AllocatedMB: c.Resource.MemoryMB, AllocatedVCores: c.Resource.VCores,
		AssignedNodeID: c.Node.String(), Priority: c.Priority, StartedTime: c.Created, FinishedTime: c.Finished,
		ElapsedTime: max(end-c.Created, 0), DiagnosticsInfo: c.Diagnostics,
		LogURL:              "http://" + c.NodeHTTPAddress + "/node/containerlogs/" + c.ID.String() + "/" + c.User,
		ContainerExitStatus: c.ExitStatus, ContainerState: c.State.String(), NodeHTTPAddress: c.NodeHTTPAddress,
		NodeID: c.Node.String(),
	}
}

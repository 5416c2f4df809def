package policies

// WithPublished narrows an RM's availability figures by the capacity YARN
// can really use there as measured outside YARN (the GPG's published
// Kubernetes batch capacity: usable memory and vcores on the nodes that run
// this sub-cluster's NodeManagers, minus what other batch pods requested).
//
// The RM believes its NodeManagers' configured sizes; on co-located nodes
// those overstate what is really free (koord-yarn-operator sets them to the
// origin batch capacity without subtracting batch pods). So the available
// figure is the smaller of the RM's own and (published - allocated): YARN's
// own allocations are part of the published usable capacity. Totals become
// the published ones. Negative results are clamped to zero.
func (c Capability) WithPublished(memoryMB, vcores int64) Capability {
	c.AvailableMB = min(c.AvailableMB, max(0, memoryMB-c.AllocatedMB))
	c.AvailableVCores = min(c.AvailableVCores, max(0, vcores-c.AllocatedVCores))
	if c.TotalMB == 0 && c.AvailableMB == 0 && c.AllocatedMB == 0 {
		// The RM reported nothing (no capability yet): the published
		// figure is all there is.
		c.AvailableMB = memoryMB
	}
	if c.TotalVCores == 0 && c.AvailableVCores == 0 && c.AllocatedVCores == 0 {
		c.AvailableVCores = vcores
	}
	c.TotalMB, c.TotalVCores = memoryMB, vcores
	return c
}

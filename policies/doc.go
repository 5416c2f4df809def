// Package policies implements the Apache Hadoop 3.4 YARN Federation policies
// in Go: the router policies that pick an application's home sub-cluster,
// the AMRMProxy policies that split an application master's resource asks
// across sub-clusters, the policy managers that pair the two from one stored
// per-queue configuration, and the configuration formats Hadoop uses for them
// (WeightedPolicyInfo JSON, the `routeradmin -policy -s` string and the batch
// XML file).
//
// The package is a leaf: it defines its own small, plain types (SubCluster,
// AppSubmission, ResourceRequest) so that the router and the AMRMProxy can
// adapt their protobuf messages cheaply, and it depends on no other yarnfed
// package. See DESIGN.md for the decisions and why.
package policies

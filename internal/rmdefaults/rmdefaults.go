// Package rmdefaults is what a Hadoop 3.4 ResourceManager with its default
// settings answers where the answer is fixed: the resource types it
// schedules and the methods of features switched off. simrm and kuberm
// serve them, so stock clients and AMs find what they expect: YarnClient
// asks for the resource types at start, the distributed shell client for
// the resource profiles, and AMRMClient re-initializes its resource types
// from the register answer (an empty list breaks it).
package rmdefaults

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/yarnfed/yarnfed/internal/hadoopipc"
	"github.com/yarnfed/yarnfed/internal/yarnpb"
)

// ClassFeatureNotEnabled is what a Hadoop RM throws for a disabled feature.
const ClassFeatureNotEnabled = "org.apache.hadoop.yarn.exceptions.YARNFeatureNotEnabledException"

const profilesOff = "resource profiles are disabled on this ResourceManager (yarn.resourcemanager.resource-profiles.enabled is false)"

// ResourceTypes are memory-mb (Mi) and vcores, both countable: the types
// of an RM with no resource-types.xml.
func ResourceTypes() []*yarnpb.ResourceTypeInfoProto {
	countable := yarnpb.ResourceTypesProto_COUNTABLE
	return []*yarnpb.ResourceTypeInfoProto{
		{Name: proto.String("memory-mb"), Units: proto.String("Mi"), Type: countable.Enum()},
		{Name: proto.String("vcores"), Units: proto.String(""), Type: countable.Enum()},
	}
}

// FeatureOff answers as a Hadoop RM does for a feature it has switched off.
func FeatureOff[Req, Resp proto.Message](name string, newReq func() Req, msg string) hadoopipc.Method {
	return hadoopipc.NewMethod(name, newReq, func(context.Context, Req) (Resp, error) {
		var zero Resp
		return zero, hadoopipc.Errorf(ClassFeatureNotEnabled, "%s", msg)
	})
}

// ClientMethods are the fixed ApplicationClientProtocol methods:
// getResourceTypeInfo, and the resource profile methods (profiles off).
func ClientMethods() []hadoopipc.Method {
	return []hadoopipc.Method{
		hadoopipc.NewMethod("getResourceTypeInfo", hadoopipc.NewOf[yarnpb.GetAllResourceTypeInfoRequestProto](),
			func(context.Context, *yarnpb.GetAllResourceTypeInfoRequestProto) (*yarnpb.GetAllResourceTypeInfoResponseProto, error) {
				return &yarnpb.GetAllResourceTypeInfoResponseProto{ResourceTypeInfo: ResourceTypes()}, nil
			}),
		FeatureOff[*yarnpb.GetAllResourceProfilesRequestProto, *yarnpb.GetAllResourceProfilesResponseProto]("getResourceProfiles", hadoopipc.NewOf[yarnpb.GetAllResourceProfilesRequestProto](), profilesOff),
		FeatureOff[*yarnpb.GetResourceProfileRequestProto, *yarnpb.GetResourceProfileResponseProto]("getResourceProfile", hadoopipc.NewOf[yarnpb.GetResourceProfileRequestProto](), profilesOff),
	}
}

package server

import (
	"context"

	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// Membership.

func (s *Server) RegisterSubCluster(ctx context.Context, r *pb.RegisterSubClusterRequest) (*pb.RegisterSubClusterResponse, error) {
	return write(ctx, s, r, s.st.RegisterSubCluster, func(c pb.StateStoreClient) method[*pb.RegisterSubClusterRequest, *pb.RegisterSubClusterResponse] {
		return c.RegisterSubCluster
	})
}

func (s *Server) Heartbeat(ctx context.Context, r *pb.HeartbeatRequest) (*pb.HeartbeatResponse, error) {
	return write(ctx, s, r, s.st.Heartbeat, func(c pb.StateStoreClient) method[*pb.HeartbeatRequest, *pb.HeartbeatResponse] {
		return c.Heartbeat
	})
}

func (s *Server) DeregisterSubCluster(ctx context.Context, r *pb.DeregisterSubClusterRequest) (*pb.DeregisterSubClusterResponse, error) {
	return write(ctx, s, r, s.st.DeregisterSubCluster, func(c pb.StateStoreClient) method[*pb.DeregisterSubClusterRequest, *pb.DeregisterSubClusterResponse] {
		return c.DeregisterSubCluster
	})
}

func (s *Server) GetSubCluster(ctx context.Context, r *pb.GetSubClusterRequest) (*pb.GetSubClusterResponse, error) {
	return read(ctx, s, r, r.GetRead(), func() (*pb.GetSubClusterResponse, error) {
		i, err := s.st.GetSubCluster(r.GetSubClusterId())
		return &pb.GetSubClusterResponse{Info: i}, err
	}, func(c pb.StateStoreClient) method[*pb.GetSubClusterRequest, *pb.GetSubClusterResponse] {
		return c.GetSubCluster
	})
}

func (s *Server) ListSubClusters(ctx context.Context, r *pb.ListSubClustersRequest) (*pb.ListSubClustersResponse, error) {
	return read(ctx, s, r, r.GetRead(), func() (*pb.ListSubClustersResponse, error) {
		l, err := s.st.ListSubClusters(r.GetFilterInactive())
		return &pb.ListSubClustersResponse{SubClusters: l}, err
	}, func(c pb.StateStoreClient) method[*pb.ListSubClustersRequest, *pb.ListSubClustersResponse] {
		return c.ListSubClusters
	})
}

// Application homes.

func (s *Server) AddApplicationHome(ctx context.Context, r *pb.AddApplicationHomeRequest) (*pb.AddApplicationHomeResponse, error) {
	return write(ctx, s, r, s.st.AddApplicationHome, func(c pb.StateStoreClient) method[*pb.AddApplicationHomeRequest, *pb.AddApplicationHomeResponse] {
		return c.AddApplicationHome
	})
}

func (s *Server) AddApplicationHomes(ctx context.Context, r *pb.AddApplicationHomesRequest) (*pb.AddApplicationHomesResponse, error) {
	return write(ctx, s, r, s.st.AddApplicationHomes, func(c pb.StateStoreClient) method[*pb.AddApplicationHomesRequest, *pb.AddApplicationHomesResponse] {
		return c.AddApplicationHomes
	})
}

func (s *Server) UpdateApplicationHome(ctx context.Context, r *pb.UpdateApplicationHomeRequest) (*pb.UpdateApplicationHomeResponse, error) {
	return write(ctx, s, r, s.st.UpdateApplicationHome, func(c pb.StateStoreClient) method[*pb.UpdateApplicationHomeRequest, *pb.UpdateApplicationHomeResponse] {
		return c.UpdateApplicationHome
	})
}

func (s *Server) GetApplicationHome(ctx context.Context, r *pb.GetApplicationHomeRequest) (*pb.GetApplicationHomeResponse, error) {
	return read(ctx, s, r, r.GetRead(), func() (*pb.GetApplicationHomeResponse, error) {
		h, err := s.st.GetApplicationHome(r.GetApplicationId(), r.GetIncludeContext())
		return &pb.GetApplicationHomeResponse{Home: h}, err
	}, func(c pb.StateStoreClient) method[*pb.GetApplicationHomeRequest, *pb.GetApplicationHomeResponse] {
		return c.GetApplicationHome
	})
}

func (s *Server) DeleteApplicationHome(ctx context.Context, r *pb.DeleteApplicationHomeRequest) (*pb.DeleteApplicationHomeResponse, error) {
	return write(ctx, s, r, s.st.DeleteApplicationHome, func(c pb.StateStoreClient) method[*pb.DeleteApplicationHomeRequest, *pb.DeleteApplicationHomeResponse] {
		return c.DeleteApplicationHome
	})
}

func (s *Server) ListApplicationHomes(ctx context.Context, r *pb.ListApplicationHomesRequest) (*pb.ListApplicationHomesResponse, error) {
	return read(ctx, s, r, r.GetRead(), func() (*pb.ListApplicationHomesResponse, error) {
		return s.st.ListApplicationHomes(r)
	}, func(c pb.StateStoreClient) method[*pb.ListApplicationHomesRequest, *pb.ListApplicationHomesResponse] {
		return c.ListApplicationHomes
	})
}

// Policies.

func (s *Server) GetPolicy(ctx context.Context, r *pb.GetPolicyRequest) (*pb.GetPolicyResponse, error) {
	return read(ctx, s, r, r.GetRead(), func() (*pb.GetPolicyResponse, error) {
		p, err := s.st.GetPolicy(r.GetQueue())
		return &pb.GetPolicyResponse{Policy: p}, err
	}, func(c pb.StateStoreClient) method[*pb.GetPolicyRequest, *pb.GetPolicyResponse] { return c.GetPolicy })
}

func (s *Server) SetPolicy(ctx context.Context, r *pb.SetPolicyRequest) (*pb.SetPolicyResponse, error) {
	return write(ctx, s, r, s.st.SetPolicy, func(c pb.StateStoreClient) method[*pb.SetPolicyRequest, *pb.SetPolicyResponse] {
		return c.SetPolicy
	})
}

func (s *Server) ListPolicies(ctx context.Context, r *pb.ListPoliciesRequest) (*pb.ListPoliciesResponse, error) {
	return read(ctx, s, r, r.GetRead(), func() (*pb.ListPoliciesResponse, error) {
		l, err := s.st.ListPolicies()
		return &pb.ListPoliciesResponse{Policies: l}, err
	}, func(c pb.StateStoreClient) method[*pb.ListPoliciesRequest, *pb.ListPoliciesResponse] {
		return c.ListPolicies
	})
}

func (s *Server) DeletePolicies(ctx context.Context, r *pb.DeletePoliciesRequest) (*pb.DeletePoliciesResponse, error) {
	return write(ctx, s, r, s.st.DeletePolicies, func(c pb.StateStoreClient) method[*pb.DeletePoliciesRequest, *pb.DeletePoliciesResponse] {
		return c.DeletePolicies
	})
}

// Reservation homes.

func (s *Server) AddReservationHome(ctx context.Context, r *pb.AddReservationHomeRequest) (*pb.AddReservationHomeResponse, error) {
	return write(ctx, s, r, s.st.AddReservationHome, func(c pb.StateStoreClient) method[*pb.AddReservationHomeRequest, *pb.AddReservationHomeResponse] {
		return c.AddReservationHome
	})
}

func (s *Server) UpdateReservationHome(ctx context.Context, r *pb.UpdateReservationHomeRequest) (*pb.UpdateReservationHomeResponse, error) {
	return write(ctx, s, r, s.st.UpdateReservationHome, func(c pb.StateStoreClient) method[*pb.UpdateReservationHomeRequest, *pb.UpdateReservationHomeResponse] {
		return c.UpdateReservationHome
	})
}

func (s *Server) GetReservationHome(ctx context.Context, r *pb.GetReservationHomeRequest) (*pb.GetReservationHomeResponse, error) {
	return read(ctx, s, r, r.GetRead(), func() (*pb.GetReservationHomeResponse, error) {
		h, err := s.st.GetReservationHome(r.GetReservationId())
		return &pb.GetReservationHomeResponse{Home: h}, err
	}, func(c pb.StateStoreClient) method[*pb.GetReservationHomeRequest, *pb.GetReservationHomeResponse] {
		return c.GetReservationHome
	})
}

func (s *Server) ListReservationHomes(ctx context.Context, r *pb.ListReservationHomesRequest) (*pb.ListReservationHomesResponse, error) {
	return read(ctx, s, r, r.GetRead(), func() (*pb.ListReservationHomesResponse, error) {
		l, err := s.st.ListReservationHomes()
		return &pb.ListReservationHomesResponse{Homes: l}, err
	}, func(c pb.StateStoreClient) method[*pb.ListReservationHomesRequest, *pb.ListReservationHomesResponse] {
		return c.ListReservationHomes
	})
}

func (s *Server) DeleteReservationHome(ctx context.Context, r *pb.DeleteReservationHomeRequest) (*pb.DeleteReservationHomeResponse, error) {
	return write(ctx, s, r, s.st.DeleteReservationHome, func(c pb.StateStoreClient) method[*pb.DeleteReservationHomeRequest, *pb.DeleteReservationHomeResponse] {
		return c.DeleteReservationHome
	})
}

// Delegation-token state.

func (s *Server) StoreMasterKey(ctx context.Context, r *pb.StoreMasterKeyRequest) (*pb.StoreMasterKeyResponse, error) {
	return write(ctx, s, r, s.st.StoreMasterKey, func(c pb.StateStoreClient) method[*pb.StoreMasterKeyRequest, *pb.StoreMasterKeyResponse] {
		return c.StoreMasterKey
	})
}

func (s *Server) RemoveMasterKey(ctx context.Context, r *pb.RemoveMasterKeyRequest) (*pb.RemoveMasterKeyResponse, error) {
	return write(ctx, s, r, s.st.RemoveMasterKey, func(c pb.StateStoreClient) method[*pb.RemoveMasterKeyRequest, *pb.RemoveMasterKeyResponse] {
		return c.RemoveMasterKey
	})
}

func (s *Server) GetMasterKey(ctx context.Context, r *pb.GetMasterKeyRequest) (*pb.GetMasterKeyResponse, error) {
	return read(ctx, s, r, r.GetRead(), func() (*pb.GetMasterKeyResponse, error) {
		k, err := s.st.GetMasterKey(r.GetKeyId())
		return &pb.GetMasterKeyResponse{Key: k}, err
	}, func(c pb.StateStoreClient) method[*pb.GetMasterKeyRequest, *pb.GetMasterKeyResponse] {
		return c.GetMasterKey
	})
}

func (s *Server) StoreToken(ctx context.Context, r *pb.StoreTokenRequest) (*pb.StoreTokenResponse, error) {
	return write(ctx, s, r, s.st.StoreToken, func(c pb.StateStoreClient) method[*pb.StoreTokenRequest, *pb.StoreTokenResponse] {
		return c.StoreToken
	})
}

func (s *Server) UpdateToken(ctx context.Context, r *pb.UpdateTokenRequest) (*pb.UpdateTokenResponse, error) {
	return write(ctx, s, r, s.st.UpdateToken, func(c pb.StateStoreClient) method[*pb.UpdateTokenRequest, *pb.UpdateTokenResponse] {
		return c.UpdateToken
	})
}

func (s *Server) RemoveToken(ctx context.Context, r *pb.RemoveTokenRequest) (*pb.RemoveTokenResponse, error) {
	return write(ctx, s, r, s.st.RemoveToken, func(c pb.StateStoreClient) method[*pb.RemoveTokenRequest, *pb.RemoveTokenResponse] {
		return c.RemoveToken
	})
}

func (s *Server) GetToken(ctx context.Context, r *pb.GetTokenRequest) (*pb.GetTokenResponse, error) {
	return read(ctx, s, r, r.GetRead(), func() (*pb.GetTokenResponse, error) {
		t, err := s.st.GetToken(r.GetIdentifier())
		return &pb.GetTokenResponse{Token: t}, err
	}, func(c pb.StateStoreClient) method[*pb.GetTokenRequest, *pb.GetTokenResponse] { return c.GetToken })
}

func (s *Server) ReserveRange(ctx context.Context, r *pb.ReserveRangeRequest) (*pb.ReserveRangeResponse, error) {
	return write(ctx, s, r, s.st.ReserveRange, func(c pb.StateStoreClient) method[*pb.ReserveRangeRequest, *pb.ReserveRangeResponse] {
		return c.ReserveRange
	})
}

func (s *Server) GetCounter(ctx context.Context, r *pb.GetCounterRequest) (*pb.GetCounterResponse, error) {
	return read(ctx, s, r, r.GetRead(), func() (*pb.GetCounterResponse, error) {
		v, err := s.st.GetCounter(r.GetCounter())
		return &pb.GetCounterResponse{Value: v}, err
	}, func(c pb.StateStoreClient) method[*pb.GetCounterRequest, *pb.GetCounterResponse] { return c.GetCounter })
}

func (s *Server) SetCounter(ctx context.Context, r *pb.SetCounterRequest) (*pb.SetCounterResponse, error) {
	return write(ctx, s, r, s.st.SetCounter, func(c pb.StateStoreClient) method[*pb.SetCounterRequest, *pb.SetCounterResponse] {
		return c.SetCounter
	})
}

// Version and format.

func (s *Server) GetVersion(ctx context.Context, r *pb.GetVersionRequest) (*pb.GetVersionResponse, error) {
	return read(ctx, s, r, r.GetRead(), s.st.GetVersion, func(c pb.StateStoreClient) method[*pb.GetVersionRequest, *pb.GetVersionResponse] {
		return c.GetVersion
	})
}

func (s *Server) Format(ctx context.Context, r *pb.FormatRequest) (*pb.FormatResponse, error) {
	return write(ctx, s, r, s.st.Format, func(c pb.StateStoreClient) method[*pb.FormatRequest, *pb.FormatResponse] {
		return c.Format
	})
}

// GPG support.

func (s *Server) SetPolicies(ctx context.Context, r *pb.SetPoliciesRequest) (*pb.SetPoliciesResponse, error) {
	return write(ctx, s, r, s.st.SetPolicies, func(c pb.StateStoreClient) method[*pb.SetPoliciesRequest, *pb.SetPoliciesResponse] {
		return c.SetPolicies
	})
}

func (s *Server) AcquireLease(ctx context.Context, r *pb.AcquireLeaseRequest) (*pb.AcquireLeaseResponse, error) {
	return write(ctx, s, r, s.st.AcquireLease, func(c pb.StateStoreClient) method[*pb.AcquireLeaseRequest, *pb.AcquireLeaseResponse] {
		return c.AcquireLease
	})
}

func (s *Server) ReleaseLease(ctx context.Context, r *pb.ReleaseLeaseRequest) (*pb.ReleaseLeaseResponse, error) {
	return write(ctx, s, r, s.st.ReleaseLease, func(c pb.StateStoreClient) method[*pb.ReleaseLeaseRequest, *pb.ReleaseLeaseResponse] {
		return c.ReleaseLease
	})
}

func (s *Server) GetLease(ctx context.Context, r *pb.GetLeaseRequest) (*pb.GetLeaseResponse, error) {
	return read(ctx, s, r, r.GetRead(), func() (*pb.GetLeaseResponse, error) {
		l, err := s.st.GetLease(r.GetName())
		return &pb.GetLeaseResponse{Lease: l}, err
	}, func(c pb.StateStoreClient) method[*pb.GetLeaseRequest, *pb.GetLeaseResponse] { return c.GetLease })
}

func (s *Server) PublishCapacity(ctx context.Context, r *pb.PublishCapacityRequest) (*pb.PublishCapacityResponse, error) {
	return write(ctx, s, r, s.st.PublishCapacity, func(c pb.StateStoreClient) method[*pb.PublishCapacityRequest, *pb.PublishCapacityResponse] {
		return c.PublishCapacity
	})
}

func (s *Server) MarkSubClustersLost(ctx context.Context, r *pb.MarkSubClustersLostRequest) (*pb.MarkSubClustersLostResponse, error) {
	return write(ctx, s, r, s.st.MarkSubClustersLost, func(c pb.StateStoreClient) method[*pb.MarkSubClustersLostRequest, *pb.MarkSubClustersLostResponse] {
		return c.MarkSubClustersLost
	})
}

func (s *Server) DeleteApplicationHomes(ctx context.Context, r *pb.DeleteApplicationHomesRequest) (*pb.DeleteApplicationHomesResponse, error) {
	return write(ctx, s, r, s.st.DeleteApplicationHomes, func(c pb.StateStoreClient) method[*pb.DeleteApplicationHomesRequest, *pb.DeleteApplicationHomesResponse] {
		return c.DeleteApplicationHomes
	})
}

// UAM registry. Rows hold live AMRMTokens; Watch never carries them (the
// store emits no event for them).

func (s *Server) PutUAM(ctx context.Context, r *pb.PutUAMRequest) (*pb.PutUAMResponse, error) {
	return write(ctx, s, r, s.st.PutUAM, func(c pb.StateStoreClient) method[*pb.PutUAMRequest, *pb.PutUAMResponse] {
		return c.PutUAM
	})
}

func (s *Server) GetUAMs(ctx context.Context, r *pb.GetUAMsRequest) (*pb.GetUAMsResponse, error) {
	return read(ctx, s, r, r.GetRead(), func() (*pb.GetUAMsResponse, error) {
		l, err := s.st.GetUAMs(r.GetApplicationId())
		return &pb.GetUAMsResponse{Records: l}, err
	}, func(c pb.StateStoreClient) method[*pb.GetUAMsRequest, *pb.GetUAMsResponse] { return c.GetUAMs })
}

func (s *Server) ListUAMs(ctx context.Context, r *pb.ListUAMsRequest) (*pb.ListUAMsResponse, error) {
	return read(ctx, s, r, r.GetRead(), func() (*pb.ListUAMsResponse, error) {
		l, err := s.st.ListUAMs(r)
		return &pb.ListUAMsResponse{Records: l}, err
	}, func(c pb.StateStoreClient) method[*pb.ListUAMsRequest, *pb.ListUAMsResponse] { return c.ListUAMs })
}

func (s *Server) DeleteUAM(ctx context.Context, r *pb.DeleteUAMRequest) (*pb.DeleteUAMResponse, error) {
	return write(ctx, s, r, s.st.DeleteUAM, func(c pb.StateStoreClient) method[*pb.DeleteUAMRequest, *pb.DeleteUAMResponse] {
		return c.DeleteUAM
	})
}

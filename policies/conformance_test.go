package policies_test

import (
	"testing"

	"github.com/yarnfed/yarnfed/policies"
	"github.com/yarnfed/yarnfed/policies/policiestest"
)

// paramsFor returns params every policy of the default registry accepts:
// LoadBased wants 0/1 weights, which WeightsJSON already is.
func paramsFor(string) []byte { return policiestest.WeightsJSON() }

func TestRouterConformance(t *testing.T) {
	reg := policies.NewDefaultRegistry()
	for _, name := range reg.RouterPolicyNames() {
		t.Run(name, func(t *testing.T) {
			policiestest.RunRouterConformance(t, func(env policies.Env) (policies.RouterPolicy, error) {
				return reg.NewRouterPolicy(name, paramsFor(name), env)
			})
		})
	}
}

func TestAMRMConformance(t *testing.T) {
	reg := policies.NewDefaultRegistry()
	for _, name := range reg.AMRMPolicyNames() {
		t.Run(name, func(t *testing.T) {
			policiestest.RunAMRMConformance(t, func(env policies.Env) (policies.AMRMBuilder, error) {
				return reg.NewAMRMBuilder(name, paramsFor(name), env)
			})
		})
	}
}

func TestManagerConformance(t *testing.T) {
	reg := policies.NewDefaultRegistry()
	for _, name := range reg.ManagerNames() {
		t.Run(name, func(t *testing.T) {
			cfg := policies.PolicyConfig{Queue: "root.a", Type: name, Params: paramsFor(name)}
			policiestest.RunRouterConformance(t, func(env policies.Env) (policies.RouterPolicy, error) {
				m, err := reg.NewManager(cfg, env)
				if err != nil {
					return nil, err
				}
				return m.Router(), nil
			})
			policiestest.RunAMRMConformance(t, func(env policies.Env) (policies.AMRMBuilder, error) {
				m, err := reg.NewManager(cfg, env)
				if err != nil {
					return nil, err
				}
				return m.AMRM(), nil
			})
		})
	}
}

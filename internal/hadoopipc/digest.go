package hadoopipc

import (
	"fmt"

	"github.com/yarnfed/yarnfed/internal/hadoopipc/digestmd5"
	"github.com/yarnfed/yarnfed/internal/yarnpb/commonpb"
)

// This file binds the SASL TOKEN method to the digestmd5 package.

func init() {
	newTokenMech = newDigestServer
	newTokenClientMech = newDigestClient
}

func toQOPs(qops []string) ([]digestmd5.QOP, error) {
	out := make([]digestmd5.QOP, 0, len(qops))
	for _, q := range qops {
		switch digestmd5.QOP(q) {
		case digestmd5.QOPAuth, digestmd5.QOPAuthInt, digestmd5.QOPAuthConf:
			out = append(out, digestmd5.QOP(q))
		default:
			return nil, fmt.Errorf("unknown SASL qop %q (want auth, auth-int or auth-conf)", q)
		}
	}
	return out, nil
}

type digestServer struct {
	srv *digestmd5.Server
	id  []byte
}

func newDigestServer(lookup func(identifier []byte) ([]byte, error), qops []string) (tokenMech, error) {
	qs, err := toQOPs(qops)
	if err != nil {
		return nil, err
	}
	m := &digestServer{}
	m.srv = digestmd5.NewServer(digestmd5.ServerConfig{
		ServerName: digestmd5.HadoopServerName,
		Protocol:   digestmd5.HadoopProtocol,
		QOPs:       qs,
		LookupPassword: func(user string) ([]byte, error) {
			id, err := digestmd5.DecodeHadoopUsername(user)
			if err != nil {
				return nil, err
			}
			pw, err := lookup(id)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", errTokenLookup, err)
			}
			m.id = id
			return digestmd5.HadoopPassword(pw), nil
		},
	})
	return m, nil
}

func (m *digestServer) Challenge() ([]byte, error)          { return m.srv.Challenge() }
func (m *digestServer) Respond(resp []byte) ([]byte, error) { return m.srv.Respond(resp) }

func (m *digestServer) Result() ([]byte, string, securityLayer) {
	var layer securityLayer
	if l := m.srv.SecurityLayer(); l != nil {
		layer = l
	}
	return m.id, string(m.srv.NegotiatedQOP()), layer
}

type digestClient struct{ cli *digestmd5.Client }

// defaultClientQOPs prefers the cheapest protection but accepts what a
// server insists on (hadoop.rpc.protection integrity or privacy).
var defaultClientQOPs = []string{"auth", "auth-int", "auth-conf"}

func newDigestClient(token *commonpb.TokenProto, protocol, serverID string, qops []string) (tokenClientMech, error) {
	if len(qops) == 0 {
		qops = defaultClientQOPs
	}
	qs, err := toQOPs(qops)
	if err != nil {
		return nil, err
	}
	return &digestClient{cli: digestmd5.NewClient(digestmd5.ClientConfig{
		Username:   digestmd5.HadoopUsername(token.GetIdentifier()),
		Password:   digestmd5.HadoopPassword(token.GetPassword()),
		Protocol:   protocol,
		ServerName: serverID,
		QOPs:       qs,
	})}, nil
}

func (m *digestClient) Respond(ch []byte) ([]byte, error) { return m.cli.Respond(ch) }
func (m *digestClient) Verify(rspauth []byte) error       { return m.cli.Verify(rspauth) }

func (m *digestClient) Result() (string, securityLayer) {
	var layer securityLayer
	if l := m.cli.SecurityLayer(); l != nil {
		layer = l
	}
	return string(m.cli.NegotiatedQOP()), layer
}

// relayableResponse reads the token identifier a relayed digest-response
// logs in with (base64-decoded SASL username; unverified until the
// upstream accepts the response) and checks that it chose qop auth, the
// only one a relay can serve.
func relayableResponse(response []byte) ([]byte, error) {
	info, err := digestmd5.ParseResponseInfo(response)
	if err != nil {
		return nil, fmt.Errorf("%w: digest-response: %v", ErrAuth, err)
	}
	if info.QOP != digestmd5.QOPAuth {
		return nil, fmt.Errorf("%w: the client chose qop %q (%s)", ErrRelayProtection, info.QOP, protectionSetting(info.QOP))
	}
	id, err := digestmd5.DecodeHadoopUsername(info.Username)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errTokenLookup, err)
	}
	return id, nil
}

// relayableChallenge checks that an upstream digest-challenge offers qop
// auth. Relaying never rewrites the challenge to drop auth-int/auth-conf:
// that would silently weaken what the upstream asked for.
func relayableChallenge(challenge []byte) error {
	qops, err := digestmd5.ChallengeQOPs(challenge)
	if err != nil {
		return fmt.Errorf("%w: upstream digest-challenge: %v", ErrAuth, err)
	}
	for _, q := range qops {
		if q == digestmd5.QOPAuth {
			return nil
		}
	}
	names := make([]string, len(qops))
	for i, q := range qops {
		names[i] = fmt.Sprintf("%s (%s)", q, protectionSetting(q))
	}
	return fmt.Errorf("%w: the upstream server offers only %v", ErrRelayProtection, names)
}

// protectionSetting names the hadoop.rpc.protection value behind a qop.
func protectionSetting(q digestmd5.QOP) string {
	switch q {
	case digestmd5.QOPAuth:
		return "hadoop.rpc.protection=authentication"
	case digestmd5.QOPAuthInt:
		return "hadoop.rpc.protection=integrity"
	case digestmd5.QOPAuthConf:
		return "hadoop.rpc.protection=privacy"
	}
	return "unknown hadoop.rpc.protection"
}

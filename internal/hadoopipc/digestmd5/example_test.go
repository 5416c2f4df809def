package digestmd5_test

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/yarnfed/yarnfed/internal/hadoopipc/digestmd5"
)

// A Hadoop TOKEN login with qop auth-int, both sides in one process. In
// hadoopipc the tokens travel in RpcSaslProto NEGOTIATE / INITIATE /
// SUCCESS messages and wrapped packets in WRAP messages.
func Example() {
	identifier, password := []byte("token identifier"), []byte("token password")

	srv := digestmd5.NewServer(digestmd5.ServerConfig{
		ServerName: digestmd5.HadoopServerName,
		Protocol:   digestmd5.HadoopProtocol,
		QOPs:       []digestmd5.QOP{digestmd5.QOPAuthInt, digestmd5.QOPAuth},
		LookupPassword: func(user string) ([]byte, error) {
			id, err := digestmd5.DecodeHadoopUsername(user)
			if err != nil {
				return nil, err
			}
			if !bytes.Equal(id, identifier) {
				return nil, errors.New("token not found")
			}
			return digestmd5.HadoopPassword(password), nil
		},
	})
	cli := digestmd5.NewClient(digestmd5.ClientConfig{
		Username:   digestmd5.HadoopUsername(identifier),
		Password:   digestmd5.HadoopPassword(password),
		Protocol:   digestmd5.HadoopProtocol,
		ServerName: digestmd5.HadoopServerName,
		QOPs:       []digestmd5.QOP{digestmd5.QOPAuthInt},
	})

	challenge, _ := srv.Challenge()       // server -> client (NEGOTIATE)
	response, _ := cli.Respond(challenge) // client -> server (INITIATE)
	rspauth, err := srv.Respond(response) // server -> client (SUCCESS)
	if err != nil {
		fmt.Println("login failed:", err) // -> FATAL_UNAUTHORIZED
		return
	}
	if err := cli.Verify(rspauth); err != nil {
		fmt.Println("server not trusted:", err)
		return
	}
	id, _ := digestmd5.DecodeHadoopUsername(srv.Username())
	fmt.Printf("user %q qop %s\n", id, srv.NegotiatedQOP())

	wrapped, _ := cli.SecurityLayer().Wrap([]byte("rpc packet"))
	plain, err := srv.SecurityLayer().Unwrap(wrapped)
	fmt.Printf("%q %v (+%d bytes)\n", plain, err, len(wrapped)-len(plain))
	// Output:
	// user "token identifier" qop auth-int
	// "rpc packet" <nil> (+16 bytes)
}

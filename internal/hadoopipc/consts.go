package hadoopipc

// Wire protocol names (REFERENCE section 2). Every YARN protocol is version 1.
const (
	ProtocolApplicationClient = "org.apache.hadoop.yarn.api.ApplicationClientProtocolPB"
	ProtocolApplicationMaster = "org.apache.hadoop.yarn.api.ApplicationMasterProtocolPB"
	ProtocolRMAdmin           = "org.apache.hadoop.yarn.server.api.ResourceManagerAdministrationProtocolPB"
)

// Java exception class names. Java clients rebuild typed exceptions from the
// class name in the reply header, so these strings are part of the wire
// contract and must match Hadoop 3.4 exactly.
const (
	ClassYarnException                   = "org.apache.hadoop.yarn.exceptions.YarnException"
	ClassApplicationNotFound             = "org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException"
	ClassApplicationAttemptNotFound      = "org.apache.hadoop.yarn.exceptions.ApplicationAttemptNotFoundException"
	ClassContainerNotFound               = "org.apache.hadoop.yarn.exceptions.ContainerNotFoundException"
	ClassInvalidApplicationMasterRequest = "org.apache.hadoop.yarn.exceptions.InvalidApplicationMasterRequestException"
	ClassApplicationMasterNotRegistered  = "org.apache.hadoop.yarn.exceptions.ApplicationMasterNotRegisteredException"
	ClassInvalidResourceRequest          = "org.apache.hadoop.yarn.exceptions.InvalidResourceRequestException"
	ClassInvalidContainerRelease         = "org.apache.hadoop.yarn.exceptions.InvalidContainerReleaseException"
	ClassInvalidResourceBlacklistRequest = "org.apache.hadoop.yarn.exceptions.InvalidResourceBlacklistRequestException"
	ClassApplicationIDNotProvided        = "org.apache.hadoop.yarn.exceptions.ApplicationIdNotProvidedException"
	ClassInvalidToken                    = "org.apache.hadoop.security.token.SecretManager$InvalidToken"
	ClassAccessControl                   = "org.apache.hadoop.security.AccessControlException"
	ClassStandby                         = "org.apache.hadoop.ipc.StandbyException"
	ClassRetriable                       = "org.apache.hadoop.ipc.RetriableException"
	ClassIOException                     = "java.io.IOException"
	ClassUnsupportedOperation            = "java.lang.UnsupportedOperationException"
	ClassIllegalArgument                 = "java.lang.IllegalArgumentException"
	ClassNoSuchMethod                    = "org.apache.hadoop.ipc.RpcNoSuchMethodException"
	ClassNoSuchProtocol                  = "org.apache.hadoop.ipc.RpcNoSuchProtocolException"
	// ClassVersionMismatch is used both for a bad connection preamble (FATAL)
	// and for a protocol version the server does not serve (ERROR).
	ClassVersionMismatch = "org.apache.hadoop.ipc.RPC$VersionMismatch"
	// ClassRpcServerException is what Hadoop names in replies to malformed
	// RPC headers and other IPC-layer failures.
	ClassRpcServerException = "org.apache.hadoop.ipc.RpcServerException"
	ClassIpcException       = "org.apache.hadoop.ipc.IpcException"
	ClassSaslException      = "javax.security.sasl.SaslException"
	// ClassInvalidProtocolBuffer is what a Hadoop 3.4 server (shaded protobuf)
	// reports for a request body it cannot parse.
	ClassInvalidProtocolBuffer = "org.apache.hadoop.thirdparty.protobuf.InvalidProtocolBufferException"
)

// IPC constants (Hadoop RpcConstants and Server).
const (
	// rpcVersion is the only connection-header version we speak (Hadoop 2.x and later).
	rpcVersion = 9

	authProtocolNone byte = 0x00
	authProtocolSASL byte = 0xDF // -33 as a signed byte

	callIDAuthFailed        int32 = -1 // replies to preamble failures
	callIDConnectionContext int32 = -3
	callIDPing              int32 = -4
	callIDSASL              int32 = -33

	// invalidRetryCount is the retry count of out-of-band packets.
	invalidRetryCount int32 = -1

	// saslDefaultRealm is the realm and server id of TOKEN/DIGEST-MD5 (SaslRpcServer).
	saslDefaultRealm = "default"

	authMethodSimple = "SIMPLE"
	authMethodToken  = "TOKEN"
	mechDigestMD5    = "DIGEST-MD5"
)

// rpcMagic opens every connection.
var rpcMagic = [4]byte{'h', 'r', 'p', 'c'}

// httpGet is what an HTTP client sends first; Hadoop answers such a peer with
// a plain-text hint instead of an RPC reply.
var httpGet = [4]byte{'G', 'E', 'T', ' '}

// httpOnIPCPortReply is our own wording of that hint.
const httpOnIPCPortReply = "HTTP/1.1 404 Not Found\r\n" +
	"Content-type: text/plain\r\n\r\n" +
	"This port speaks Hadoop IPC (RPC version 9), not HTTP. " +
	"Point your browser at the web UI port of this daemon instead.\r\n"

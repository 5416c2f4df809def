// Package peertest holds interoperability tests against independent Hadoop
// IPC implementations. It has no code of its own: its tests must not link
// our hadoop.common protobuf registrations (colinmarc/hdfs registers the
// same names), so they run our server as a separate process.
package peertest

// Package e2e holds the interop tests against unmodified Apache Hadoop: a
// Maven project (pom.xml, src/main/java) builds a classpath of Hadoop 3.4 jars
// plus small Java drivers, and the Go tests (build tag interop, run by
// `make test-interop`) start real Hadoop JVMs against our Go servers and our Go
// clients against a real MiniYARNCluster. See README.md.
package e2e

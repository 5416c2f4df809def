#!/usr/bin/env bash
# Dumps the protobuf descriptors embedded in the Hadoop jars (Maven Central)
# to $1 (default /tmp/hadoop-yarn-descriptors.pb). Then:
#   YARNPB_HADOOP_DESCRIPTORS=$1 go test -run TestMatchesHadoopDescriptors ./internal/yarnpbcheck
set -euo pipefail
out=$(realpath -m "${1:-/tmp/hadoop-yarn-descriptors.pb}")
ver=${HADOOP_VERSION:-3.4.3}
here=$(cd "$(dirname "$0")" && pwd)
repo=${MAVEN_REPO:-$HOME/.m2/repository}
# fetch GROUP ARTIFACT VERSION: one Maven run per jar not already in the
# local repository (each run is a JVM start: a warm repository needs none).
# Maven is told the repository: its default follows the JVM's user.home (the
# passwd entry), not $HOME, so the jar could land where the classpath below
# does not look (seen with HOME pointed elsewhere).
fetch() {
  local jar="$repo/${1//.//}/$2/$3/$2-$3.jar"
  [ -f "$jar" ] || mvn -q dependency:get -Dmaven.repo.local="$repo" -Dartifact="$1:$2:$3" -Dtransitive=false
}
for a in hadoop-yarn-api hadoop-yarn-common hadoop-yarn-server-common hadoop-common; do
  fetch org.apache.hadoop $a $ver
done
fetch org.apache.hadoop.thirdparty hadoop-shaded-protobuf_3_25 1.5.0
cp=""
for a in hadoop-yarn-api hadoop-yarn-common hadoop-yarn-server-common hadoop-common; do
  cp="$cp:$repo/org/apache/hadoop/$a/$ver/$a-$ver.jar"
done
cp="$cp:$repo/org/apache/hadoop/thirdparty/hadoop-shaded-protobuf_3_25/1.5.0/hadoop-shaded-protobuf_3_25-1.5.0.jar"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
javac -d "$tmp" -cp "$cp" "$here/DumpDescriptors.java"
java -cp "$tmp$cp" DumpDescriptors "$out" \
  org.apache.hadoop.yarn.proto.YarnProtos \
  org.apache.hadoop.yarn.proto.YarnServiceProtos \
  org.apache.hadoop.yarn.proto.ApplicationClientProtocol \
  org.apache.hadoop.yarn.proto.ApplicationMasterProtocol \
  org.apache.hadoop.yarn.proto.ResourceManagerAdministrationProtocol \
  org.apache.hadoop.yarn.proto.YarnServerResourceManagerServiceProtos \
  org.apache.hadoop.yarn.proto.YarnSecurityTokenProtos \
  org.apache.hadoop.yarn.federation.proto.YarnServerFederationProtos \
  org.apache.hadoop.ipc.protobuf.RpcHeaderProtos \
  org.apache.hadoop.ipc.protobuf.IpcConnectionContextProtos \
  org.apache.hadoop.ipc.protobuf.ProtobufRpcEngine2Protos \
  org.apache.hadoop.security.proto.SecurityProtos
echo "wrote $out"

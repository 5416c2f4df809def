package org.yarnfed.e2e;

import java.io.InputStream;
import java.net.InetSocketAddress;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.ipc.ProtobufRpcEngine2;
import org.apache.hadoop.ipc.RPC;
import org.apache.hadoop.ipc.TestRpcBase;
import org.apache.hadoop.ipc.protobuf.TestRpcServiceProtos;
import org.apache.hadoop.net.NetUtils;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.security.authorize.ProxyUsers;

/**
 * A real Hadoop IPC server (org.apache.hadoop.ipc.Server, ProtobufRpcEngine2) in Kerberos mode,
 * serving Hadoop's own test protocol (TestRpcBase$TestRpcService: echo, getAuthUser,
 * getCurrentUser, ...): the JDK's SASL GSSAPI server and Hadoop's SaslRpcServer, connection
 * context and proxy-user checks, for our Go client to log in to.
 *
 * <p>Usage: KerberosRpcServer --krb5conf FILE --principal rm/localhost@REALM --keytab FILE
 * [--protection authentication|integrity|privacy] [--proxyuser NAME:USERS] (sets
 * hadoop.proxyuser.NAME.hosts=* and .users=USERS). Prints {"op":"ready","result":{"port":N}}
 * and serves until stdin closes.
 */
public final class KerberosRpcServer {
  private KerberosRpcServer() {}

  public static void main(String[] args) throws Exception {
    Configuration conf = new Configuration();
    KerberosArgs krb = KerberosArgs.parse(args, (a, i) -> {
      switch (a[i]) {
        case "--protection":
          conf.set("hadoop.rpc.protection", a[++i]);
          return i;
        case "--proxyuser": {
          String[] nu = a[++i].split(":", 2);
          conf.set("hadoop.proxyuser." + nu[0] + ".hosts", "*");
          conf.set("hadoop.proxyuser." + nu[0] + ".users", nu[1]);
          return i;
        }
        default:
          return KerberosArgs.unknown(a, i);
      }
    });
    conf.set("hadoop.security.authentication", "kerberos");
    UserGroupInformation.setConfiguration(conf);
    UserGroupInformation.loginUserFromKeytab(krb.principal, krb.keytab);
    ProxyUsers.refreshSuperUserGroupsConfiguration(conf);
    RPC.setProtocolEngine(conf, TestRpcBase.TestRpcService.class, ProtobufRpcEngine2.class);
    RPC.Server server = new RPC.Builder(conf)
        .setProtocol(TestRpcBase.TestRpcService.class)
        .setInstance(TestRpcServiceProtos.TestProtobufRpcProto
            .newReflectiveBlockingService(new TestRpcBase.PBServerImpl()))
        .setBindAddress("127.0.0.1").setPort(0).setNumHandlers(2).build();
    server.start();
    InetSocketAddress addr = NetUtils.getConnectAddress(server);
    Drivers.ok("ready", new Json().put("port", addr.getPort()));
    InputStream in = System.in;
    while (in.read() >= 0) {
      // serve until the test closes stdin
    }
    server.stop();
  }
}

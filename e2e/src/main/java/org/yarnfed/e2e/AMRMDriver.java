package org.yarnfed.e2e;

import java.security.PrivilegedExceptionAction;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

import org.apache.hadoop.io.Text;
import org.apache.hadoop.net.NetUtils;
import org.apache.hadoop.security.SecurityUtil;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.security.token.TokenIdentifier;
import org.apache.hadoop.yarn.api.protocolrecords.AllocateResponse;
import org.apache.hadoop.yarn.api.protocolrecords.RegisterApplicationMasterResponse;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.FinalApplicationStatus;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.client.api.AMRMClient;
import org.apache.hadoop.yarn.client.api.AMRMClient.ContainerRequest;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

/**
 * Drives the real Hadoop {@link AMRMClient} (ApplicationMasterProtocol) as an AM would: the
 * AMRMToken given on the command line goes into the caller's credentials, so Hadoop's IPC client
 * authenticates with SASL TOKEN / DIGEST-MD5 exactly as a launched AM does.
 *
 * <p>Usage: AMRMDriver --scheduler host:port --token-id B64 --token-password B64
 * [--token-kind YARN_AM_RM_TOKEN] [--token-service host:port] [--user U] [--set key=value]... OP...;
 * e.g. --set hadoop.rpc.protection=privacy makes the SASL layer auth-conf;
 * OPs: register, ask:N:memMB:vcores, allocate (one heartbeat), await:N:timeoutMs (heartbeat until
 * N containers arrived in total), finish[:STATUS[:message]].
 */
public final class AMRMDriver {
  private AMRMDriver() {}

  public static void main(String[] args) {
    YarnConfiguration conf = new YarnConfiguration();
    Drivers.fastFailures(conf);
    String scheduler = null;
    String tokenId = null;
    String tokenPassword = null;
    String kind = "YARN_AM_RM_TOKEN";
    String service = null;
    String user = "yarnfed-e2e-am";
    List<String> ops = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--scheduler": scheduler = args[++i]; break;
        case "--token-id": tokenId = args[++i]; break;
        case "--token-password": tokenPassword = args[++i]; break;
        case "--token-kind": kind = args[++i]; break;
        case "--token-service": service = args[++i]; break;
        case "--user": user = args[++i]; break;
        case "--set": {
          String kv = args[++i];
          int eq = kv.indexOf('=');
          conf.set(kv.substring(0, eq), kv.substring(eq + 1));
          break;
        }
        default: ops.add(args[i]);
      }
    }
    if (scheduler == null || tokenId == null || tokenPassword == null) {
      System.err.println("AMRMDriver: --scheduler, --token-id and --token-password are required");
      System.exit(2);
    }
    conf.set(YarnConfiguration.RM_SCHEDULER_ADDRESS, scheduler);
    if (service == null) {
      service = SecurityUtil.buildTokenService(NetUtils.createSocketAddr(scheduler)).toString();
    }
    Token<TokenIdentifier> token = new Token<>(
        Base64.getDecoder().decode(tokenId), Base64.getDecoder().decode(tokenPassword),
        new Text(kind), new Text(service));
    UserGroupInformation ugi = UserGroupInformation.createRemoteUser(user);
    ugi.addToken(token);

    int[] failed = {0};
    try {
      ugi.doAs((PrivilegedExceptionAction<Void>) () -> {
        run(conf, ops, failed);
        return null;
      });
    } catch (Throwable t) {
      failed[0]++;
      Drivers.fail("start", t);
    }
    System.exit(Math.min(failed[0], 100));
  }

  private static void run(YarnConfiguration conf, List<String> ops, int[] failed) {
    AMRMClient<ContainerRequest> am = AMRMClient.createAMRMClient();
    am.init(conf);
    am.start();
    int received = 0;
    try {
      for (String op : ops) {
        String[] p = op.split(":", -1);
        try {
          switch (p[0]) {
            case "register": {
              RegisterApplicationMasterResponse r =
                  am.registerApplicationMaster("localhost", 0, "");
              Drivers.ok(op, new Json()
                  .put("maxMemoryMB", r.getMaximumResourceCapability().getMemorySize())
                  .put("maxVcores", r.getMaximumResourceCapability().getVirtualCores())
                  .put("queue", r.getQueue())
                  .put("previousContainers", r.getContainersFromPreviousAttempts().size()));
              break;
            }
            case "ask": {
              int n = Integer.parseInt(p[1]);
              Resource res = Resource.newInstance(Long.parseLong(p[2]), Integer.parseInt(p[3]));
              for (int i = 0; i < n; i++) {
                am.addContainerRequest(
                    new ContainerRequest(res, null, null, Priority.newInstance(1)));
              }
              Drivers.ok(op, new Json().put("asked", n));
              break;
            }
            case "allocate": {
              AllocateResponse r = am.allocate(0.1f);
              received += r.getAllocatedContainers().size();
              Drivers.ok(op, allocation(r));
              break;
            }
            case "await": {
              int want = Integer.parseInt(p[1]);
              long deadline = System.currentTimeMillis() + Long.parseLong(p[2]);
              List<Object> ids = new ArrayList<>();
              List<Object> nodes = new ArrayList<>();
              int heartbeats = 0;
              while (received < want) {
                if (System.currentTimeMillis() > deadline) {
                  throw new java.util.concurrent.TimeoutException(
                      "got " + received + " of " + want + " containers");
                }
                AllocateResponse r = am.allocate(0.2f);
                heartbeats++;
                for (Container c : r.getAllocatedContainers()) {
                  ids.add(c.getId().toString());
                  nodes.add(c.getNodeId().toString());
                  received++;
                }
                if (received < want) {
                  Thread.sleep(100); // AM heartbeat pacing, as a real AM does
                }
              }
              Drivers.ok(op, new Json().put("containers", ids).put("nodes", nodes)
                  .put("heartbeats", heartbeats));
              break;
            }
            case "finish": {
              FinalApplicationStatus st = FinalApplicationStatus.valueOf(
                  p.length > 1 && !p[1].isEmpty() ? p[1] : "SUCCEEDED");
              am.unregisterApplicationMaster(st, p.length > 2 ? p[2] : "", "");
              Drivers.ok(op, new Json().put("status", st.toString()));
              break;
            }
            default:
              throw new IllegalArgumentException("unknown op " + p[0]);
          }
        } catch (Throwable t) {
          failed[0]++;
          Drivers.fail(op, t);
        }
      }
    } finally {
      am.stop();
    }
  }

  private static Json allocation(AllocateResponse r) {
    List<Object> ids = new ArrayList<>();
    for (Container c : r.getAllocatedContainers()) {
      ids.add(c.getId().toString());
    }
    return new Json()
        .put("responseId", r.getResponseId())
        .put("containers", ids)
        .put("completed", r.getCompletedContainersStatuses().size())
        .put("numClusterNodes", r.getNumClusterNodes())
        .put("availableMemoryMB",
            r.getAvailableResources() == null ? -1 : r.getAvailableResources().getMemorySize());
  }
}

package org.yarnfed.e2e;

import java.security.PrivilegedExceptionAction;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import org.apache.hadoop.fs.Path;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.yarn.api.records.ApplicationAttemptId;
import org.apache.hadoop.yarn.api.records.ApplicationAttemptReport;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationReport;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.NodeReport;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.YarnClusterMetrics;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.client.api.YarnClientApplication;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.util.Records;

/**
 * Drives the real Hadoop {@link YarnClient} (ApplicationClientProtocol) against whatever
 * yarn.resourcemanager.address the given yarn-site.xml names, one JSON line per operation.
 *
 * <p>Usage: YarnClientDriver --conf yarn-site.xml OP...; OPs: metrics, nodes, newapp, list,
 * submit[:name[:queue[:unmanaged]]], report[:appId] (default: last submitted), waittoken[:appId]
 * (report once the AMRMToken of an unmanaged AM is there, up to 30 s), waitstate:STATE[:appId]
 * (report once the app is in STATE, up to 30 s), kill[:appId], dtoken[:renewer],
 * countapps (getApplications, count only), labels (getNodeToLabels), queueacls (getQueueUserAcls), parallel:THREADS:CALLS (concurrent
 * getClusterMetrics on the shared connection), submituam:APPID[:queue] (submit an unmanaged AM
 * under an ApplicationId minted elsewhere, shaped as Hadoop's UnmanagedApplicationManager shapes
 * a secondary sub-cluster's UAM), attempt[:appId] (the current attempt and its state).
 * --user NAME runs every call as that (simple-auth) user. --krb5conf FILE --principal P --keytab FILE
 * turn Kerberos on (hadoop.security.authentication=kerberos) and log in from the keytab with
 * UserGroupInformation.loginUserFromKeytab; --user NAME then acts for NAME as a proxy user (doAs).
 * A conf saying kerberos without --principal runs with no ticket. --view-acl ACL / --modify-acl
 * ACL set the submitted applications' VIEW_APP / MODIFY_APP lists. An operation's failure is printed and
 * the next one still runs; the exit code is the number of failed operations (capped at 100).
 */
public final class YarnClientDriver {
  private YarnClientDriver() {}

  private static String viewACL;
  private static String modifyACL;

  public static void main(String[] args) throws Exception {
    // The JDK reads krb5.conf once, when Kerberos is first touched: set it before anything else.
    for (int i = 0; i + 1 < args.length; i++) {
      if (args[i].equals("--krb5conf")) {
        System.setProperty("java.security.krb5.conf", args[i + 1]);
        System.setProperty("sun.security.krb5.disableReferrals", "true");
      }
    }
    YarnConfiguration conf = new YarnConfiguration();
    String principal = null;
    String keytab = null;
    Drivers.fastFailures(conf);
    List<String> ops = new ArrayList<>();
    String user = null;
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--user")) {
        user = args[++i];
      } else if (args[i].equals("--krb5conf")) {
        i++;
      } else if (args[i].equals("--principal")) {
        principal = args[++i];
      } else if (args[i].equals("--keytab")) {
        keytab = args[++i];
      } else if (args[i].equals("--view-acl")) {
        viewACL = args[++i];
      } else if (args[i].equals("--modify-acl")) {
        modifyACL = args[++i];
      } else if (args[i].equals("--conf")) {
        conf.addResource(new Path(args[++i]));
      } else if (args[i].equals("--set")) {
        String kv = args[++i];
        int eq = kv.indexOf('=');
        conf.set(kv.substring(0, eq), kv.substring(eq + 1));
      } else {
        ops.add(args[i]);
      }
    }
    if (principal != null) {
      conf.set("hadoop.security.authentication", "kerberos");
      conf.set("hadoop.security.authorization", "true");
      UserGroupInformation.setConfiguration(conf);
      UserGroupInformation.loginUserFromKeytab(principal, keytab);
      UserGroupInformation login = UserGroupInformation.getLoginUser();
      UserGroupInformation as = user == null ? login : UserGroupInformation.createProxyUser(user, login);
      System.exit(as.doAs((PrivilegedExceptionAction<Integer>) () -> run(conf, ops)));
    }
    if ("kerberos".equals(conf.get("hadoop.security.authentication"))) {
      // Security on and no login: the JVM has no ticket (what a user without kinit gets).
      UserGroupInformation.setConfiguration(conf);
    }
    if (user == null) {
      System.exit(run(conf, ops));
    }
    // The RM gives an unmanaged AM's AMRMToken only to the application's own user, as
    // Hadoop's UAM launcher asks for it: run every call as that user.
    int code = UserGroupInformation.createRemoteUser(user)
        .doAs((PrivilegedExceptionAction<Integer>) () -> run(conf, ops));
    System.exit(code);
  }

  private static int run(YarnConfiguration conf, List<String> ops) {
    int failed = 0;
    YarnClient yc = YarnClient.createYarnClient();
    try {
      yc.init(conf);
      yc.start();
      ApplicationId last = null;
      for (String op : ops) {
        String[] p = op.split(":", -1);
        try {
          switch (p[0]) {
            case "metrics": {
              YarnClusterMetrics m = yc.getYarnClusterMetrics();
              Drivers.ok(op, new Json()
                  .put("numNodeManagers", m.getNumNodeManagers())
                  .put("numActiveNodeManagers", m.getNumActiveNodeManagers())
                  .put("numDecommissionedNodeManagers", m.getNumDecommissionedNodeManagers())
                  .put("numLostNodeManagers", m.getNumLostNodeManagers())
                  .put("numUnhealthyNodeManagers", m.getNumUnhealthyNodeManagers())
                  .put("numRebootedNodeManagers", m.getNumRebootedNodeManagers()));
              break;
            }
            case "nodes": {
              List<Object> ids = new ArrayList<>();
              for (NodeReport n : yc.getNodeReports()) {
                ids.add(new Json().put("id", n.getNodeId().toString())
                    .put("state", n.getNodeState().toString())
                    .put("memoryMB", n.getCapability().getMemorySize())
                    .put("vcores", n.getCapability().getVirtualCores()));
              }
              Drivers.ok(op, new Json().put("nodes", ids));
              break;
            }
            case "newapp": {
              YarnClientApplication app = yc.createApplication();
              Resource max = app.getNewApplicationResponse().getMaximumResourceCapability();
              Drivers.ok(op, new Json()
                  .put("applicationId", app.getNewApplicationResponse().getApplicationId().toString())
                  .put("clusterTimestamp",
                      app.getNewApplicationResponse().getApplicationId().getClusterTimestamp())
                  .put("id", app.getNewApplicationResponse().getApplicationId().getId())
                  .put("maxMemoryMB", max.getMemorySize())
                  .put("maxVcores", max.getVirtualCores()));
              break;
            }
            case "list": {
              List<Object> apps = new ArrayList<>();
              for (ApplicationReport r : yc.getApplications()) {
                apps.add(report(r));
              }
              Drivers.ok(op, new Json().put("applications", apps));
              break;
            }
            case "countapps": {
              // For large lists: only the count and the first and last ids.
              List<ApplicationReport> all = yc.getApplications();
              Drivers.ok(op, new Json().put("count", all.size())
                  .put("first", all.isEmpty() ? null : all.get(0).getApplicationId().toString())
                  .put("last", all.isEmpty() ? null : all.get(all.size() - 1).getApplicationId().toString()));
              break;
            }
            case "submit": {
              YarnClientApplication app = yc.createApplication();
              ApplicationSubmissionContext ctx = app.getApplicationSubmissionContext();
              ctx.setApplicationName(p.length > 1 && !p[1].isEmpty() ? p[1] : "yarnfed-e2e");
              ctx.setQueue(p.length > 2 && !p[2].isEmpty() ? p[2] : "default");
              ctx.setUnmanagedAM(p.length > 3 && p[3].equals("unmanaged"));
              ctx.setApplicationType("YARNFED-E2E");
              ctx.setPriority(Priority.newInstance(0));
              ctx.setResource(Resource.newInstance(256, 1));
              ContainerLaunchContext clc = Records.newRecord(ContainerLaunchContext.class);
              clc.setCommands(Collections.singletonList("/bin/true"));
              java.util.Map<org.apache.hadoop.yarn.api.records.ApplicationAccessType, String> acls =
                  new java.util.HashMap<>();
              if (viewACL != null) {
                acls.put(org.apache.hadoop.yarn.api.records.ApplicationAccessType.VIEW_APP, viewACL);
              }
              if (modifyACL != null) {
                acls.put(org.apache.hadoop.yarn.api.records.ApplicationAccessType.MODIFY_APP, modifyACL);
              }
              if (!acls.isEmpty()) {
                clc.setApplicationACLs(acls);
              }
              ctx.setAMContainerSpec(clc);
              last = yc.submitApplication(ctx);
              Drivers.ok(op, new Json().put("applicationId", last.toString()));
              break;
            }
            case "submituam": {
              // What a federation AMRMProxy submits to a secondary sub-cluster: the home
              // application's own id (minted by another RM, so another cluster timestamp),
              // unmanaged, containers kept across attempts, an empty launch context.
              ApplicationSubmissionContext ctx = Records.newRecord(ApplicationSubmissionContext.class);
              ctx.setApplicationId(ApplicationId.fromString(p[1]));
              ctx.setApplicationName("UnmanagedAM");
              ctx.setQueue(p.length > 2 && !p[2].isEmpty() ? p[2] : "default");
              ctx.setUnmanagedAM(true);
              ctx.setKeepContainersAcrossApplicationAttempts(true);
              ctx.setPriority(Priority.newInstance(0));
              ctx.setResource(Resource.newInstance(1024, 1));
              ctx.setAMContainerSpec(Records.newRecord(ContainerLaunchContext.class));
              last = yc.submitApplication(ctx);
              Drivers.ok(op, new Json().put("applicationId", last.toString()));
              break;
            }
            case "attempt": {
              ApplicationId id = p.length > 1 && !p[1].isEmpty() ? ApplicationId.fromString(p[1]) : last;
              ApplicationAttemptId att = yc.getApplicationReport(id).getCurrentApplicationAttemptId();
              ApplicationAttemptReport ar = yc.getApplicationAttemptReport(att);
              Drivers.ok(op, new Json().put("attemptId", att.toString())
                  .put("state", ar.getYarnApplicationAttemptState().toString()));
              break;
            }
            case "report": {
              ApplicationId id = p.length > 1 ? ApplicationId.fromString(p[1]) : last;
              Drivers.ok(op, report(yc.getApplicationReport(id)));
              break;
            }
            case "waittoken": {
              // An unmanaged AM's token appears once the RM launched the attempt, which can
              // be a moment after submitApplication returned ACCEPTED.
              ApplicationId id = p.length > 1 && !p[1].isEmpty() ? ApplicationId.fromString(p[1]) : last;
              long deadline = System.currentTimeMillis() + 30_000;
              ApplicationReport r = yc.getApplicationReport(id);
              while (r.getAMRMToken() == null && System.currentTimeMillis() < deadline) {
                Thread.sleep(50);
                r = yc.getApplicationReport(id);
              }
              if (r.getAMRMToken() == null) {
                throw new java.util.concurrent.TimeoutException("no AMRMToken for " + id + " after 30s");
              }
              Drivers.ok(op, report(r));
              break;
            }
            case "waitstate": {
              // Kill of an unmanaged app answers "completed" at once (so unmanaged AMs do not
              // retry) while the state change is asynchronous: poll for it.
              String want = p[1];
              ApplicationId id = p.length > 2 && !p[2].isEmpty() ? ApplicationId.fromString(p[2]) : last;
              long deadline = System.currentTimeMillis() + 30_000;
              ApplicationReport r = yc.getApplicationReport(id);
              while (!r.getYarnApplicationState().toString().equals(want)
                  && System.currentTimeMillis() < deadline) {
                Thread.sleep(50);
                r = yc.getApplicationReport(id);
              }
              if (!r.getYarnApplicationState().toString().equals(want)) {
                throw new java.util.concurrent.TimeoutException(
                    id + " is " + r.getYarnApplicationState() + " after 30s, want " + want);
              }
              Drivers.ok(op, report(r));
              break;
            }
            case "dtoken": {
              // getRMDelegationToken: Hadoop issues one only over a Kerberos connection.
              org.apache.hadoop.yarn.api.records.Token tok =
                  yc.getRMDelegationToken(new org.apache.hadoop.io.Text(p.length > 1 ? p[1] : "yarn"));
              Drivers.ok(op, new Json().put("kind", tok.getKind())
                  .put("identifierBytes", tok.getIdentifier().remaining())
                  .put("service", tok.getService()));
              break;
            }
            case "kill": {
              ApplicationId id = p.length > 1 ? ApplicationId.fromString(p[1]) : last;
              yc.killApplication(id);
              Drivers.ok(op, new Json().put("applicationId", id.toString()));
              break;
            }
            case "parallel": {
              // N threads share the client, so Hadoop's IPC client multiplexes their calls on one
              // connection: the server must serve them concurrently and may answer out of order.
              int threads = Integer.parseInt(p[1]);
              int calls = Integer.parseInt(p[2]);
              java.util.concurrent.ExecutorService pool =
                  java.util.concurrent.Executors.newFixedThreadPool(threads);
              java.util.concurrent.atomic.AtomicInteger ok = new java.util.concurrent.atomic.AtomicInteger();
              List<java.util.concurrent.Future<?>> fs = new ArrayList<>();
              for (int i = 0; i < threads; i++) {
                fs.add(pool.submit(() -> {
                  for (int c = 0; c < calls; c++) {
                    yc.getYarnClusterMetrics();
                    ok.incrementAndGet();
                  }
                  return null;
                }));
              }
              for (java.util.concurrent.Future<?> f : fs) {
                f.get();
              }
              pool.shutdown();
              Drivers.ok(op, new Json().put("calls", ok.get()));
              break;
            }
            case "labels": {
              Drivers.ok(op, new Json().put("nodeToLabels", yc.getNodeToLabels().size()));
              break;
            }
            case "queueacls": {
              Drivers.ok(op, new Json().put("queues", yc.getQueueAclsInfo().size()));
              break;
            }
            default:
              throw new IllegalArgumentException("unknown op " + p[0]);
          }
        } catch (Throwable t) {
          failed++;
          Drivers.fail(op, t);
        }
      }
    } catch (Throwable t) {
      failed++;
      Drivers.fail("start", t);
    } finally {
      yc.stop();
    }
    return Math.min(failed, 100);
  }

  private static Json report(ApplicationReport r) {
    return new Json()
        .put("applicationId", r.getApplicationId().toString())
        .put("name", r.getName())
        .put("queue", r.getQueue())
        .put("user", r.getUser())
        .put("state", r.getYarnApplicationState().toString())
        .put("finalStatus", r.getFinalApplicationStatus().toString())
        .put("unmanaged", r.isUnmanagedApp())
        .put("hasAMRMToken", r.getAMRMToken() != null)
        .put("amrmToken", r.getAMRMToken() == null ? null : new Json()
            .put("identifier", b64(r.getAMRMToken().getIdentifier()))
            .put("password", b64(r.getAMRMToken().getPassword()))
            .put("kind", r.getAMRMToken().getKind())
            .put("service", r.getAMRMToken().getService()));
  }

  private static String b64(java.nio.ByteBuffer b) {
    java.nio.ByteBuffer d = b.duplicate();
    byte[] a = new byte[d.remaining()];
    d.get(a);
    return java.util.Base64.getEncoder().encodeToString(a);
  }
}

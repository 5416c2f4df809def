package org.yarnfed.e2e;

import java.io.File;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

/**
 * Starts an unmodified Hadoop MiniYARNCluster (1 RM, N NMs) on loopback ephemeral ports for the Go
 * interop tests, writes the effective configuration to a yarn-site.xml, prints one line
 * {@code READY {json}} and runs until stdin reaches EOF (the Go test closes the pipe) or the JVM
 * is killed.
 *
 * <p>Flags: --conf-out PATH (required), --work-dir DIR, --cluster-id ID, --epoch N, --nms N,
 * --nm-memory-mb MB, --nm-vcores N, --nm-web (NM web apps; breaks the RM's REST API in one JVM),
 * --set key=value (repeatable), --am-conf-out PATH with --am-set key=value (repeatable).
 *
 * <p>The AM-facing configuration: {@code --am-conf-out} gets the effective configuration with
 * every {@code --am-set} key overridden and marked final. It is the yarn-site.xml of the
 * HADOOP_CONF_DIR the NodeManagers hand to containers, so it is what an AM on these NMs reads,
 * while the RM keeps its own values (e.g. the AMs dial a proxy's scheduler address while the RM
 * binds its real one). Final keeps a job.xml shipped by a client (MapReduce) from overriding it.
 */
public final class MiniCluster {
  private MiniCluster() {}

  public static void main(String[] args) {
    try {
      run(args);
    } catch (Throwable t) {
      // Non-daemon Hadoop threads would keep a failed JVM alive; exit so the Go side sees it.
      t.printStackTrace();
      System.exit(1);
    }
  }

  private static void run(String[] args) throws Exception {
    String confOut = null;
    String workDir = null;
    String clusterId = "yarnfed-e2e";
    long epoch = 0;
    int nms = 1;
    boolean nmWeb = false;
    int nmMemoryMb = 4096;
    int nmVcores = 4;
    Map<String, String> extra = new LinkedHashMap<>();
    Map<String, String> amSet = new LinkedHashMap<>();
    String amConfOut = null;
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      String v = i + 1 < args.length ? args[i + 1] : null;
      switch (a) {
        case "--conf-out": confOut = v; i++; break;
        case "--work-dir": workDir = v; i++; break;
        case "--cluster-id": clusterId = v; i++; break;
        case "--epoch": epoch = Long.parseLong(v); i++; break;
        case "--nms": nms = Integer.parseInt(v); i++; break;
        case "--nm-web": nmWeb = true; break;
        case "--nm-memory-mb": nmMemoryMb = Integer.parseInt(v); i++; break;
        case "--nm-vcores": nmVcores = Integer.parseInt(v); i++; break;
        case "--set":
        case "--am-set": {
          int eq = v.indexOf('=');
          if (eq <= 0) {
            usage("bad " + a + " " + v);
          }
          (a.equals("--set") ? extra : amSet).put(v.substring(0, eq), v.substring(eq + 1));
          i++;
          break;
        }
        case "--am-conf-out": amConfOut = v; i++; break;
        default: usage("unknown flag " + a);
      }
    }
    if (confOut == null) {
      usage("--conf-out is required");
    }
    if (workDir != null) {
      // MiniYARNCluster puts its local/log dirs under target/<name> relative to the cwd unless
      // test.build.data points elsewhere; keep everything inside the test's temp dir.
      new File(workDir).mkdirs();
      System.setProperty("test.build.data", workDir);
      System.setProperty("hadoop.tmp.dir", workDir + "/tmp");
    }

    YarnConfiguration conf = new YarnConfiguration();
    conf.set(YarnConfiguration.RM_CLUSTER_ID, clusterId);
    // The RM takes its epoch from the state store only when work-preserving recovery is on;
    // an in-memory store keeps that cheap. The epoch shows up in container ids (container_eN_...),
    // which is what keeps ids distinct across federated sub-clusters sharing an ApplicationId.
    conf.setBoolean(YarnConfiguration.RECOVERY_ENABLED, true);
    conf.set(YarnConfiguration.RM_STORE,
        "org.apache.hadoop.yarn.server.resourcemanager.recovery.MemoryRMStateStore");
    conf.setLong(YarnConfiguration.RM_EPOCH, epoch);
    // MiniYARNCluster gives each NM the memory of its own key (4096 by default) over
    // yarn.nodemanager.resource.memory-mb: both are set, so the RM and the NMs agree.
    conf.setInt(YarnConfiguration.NM_PMEM_MB, nmMemoryMb);
    conf.setInt(YarnConfiguration.YARN_MINICLUSTER_NM_PMEM_MB, nmMemoryMb);
    conf.setInt(YarnConfiguration.NM_VCORES, nmVcores);
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 128);
    conf.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, false);
    conf.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
    conf.setBoolean(YarnConfiguration.TIMELINE_SERVICE_ENABLED, false);
    // Hadoop reports the configured maximum allocation for this long after RM start, then caps it
    // at the largest node; 0 makes the capped value (what a long-running RM shows) immediate, so
    // results do not depend on how long the shared cluster has been up.
    conf.setLong(YarnConfiguration.RM_WORK_PRESERVING_RECOVERY_SCHEDULING_WAIT_MS, 0);
    // Fast NM heartbeats so allocations reach the AM quickly in tests.
    conf.setLong(YarnConfiguration.RM_NM_HEARTBEAT_INTERVAL_MS, 100);
    for (Map.Entry<String, String> e : extra.entrySet()) {
      conf.set(e.getKey(), e.getValue());
    }
    if ("kerberos".equals(conf.get("hadoop.security.authentication"))) {
      // Security on (--set hadoop.security.authentication=kerberos plus the RM/NM principal and
      // keytab keys): UGI reads its switch from this conf, and the process logs in from the RM's
      // keytab. MiniYARNCluster's RM and NMs skip their own keytab login (doSecureLogin is a
      // no-op in the test cluster), so the process logs in here, once, as Hadoop's secure
      // MiniYARNCluster tests do. One JVM has one login user, so RM and NMs share a principal.
      org.apache.hadoop.security.UserGroupInformation.setConfiguration(conf);
      org.apache.hadoop.security.SecurityUtil.login(conf, YarnConfiguration.RM_KEYTAB,
          YarnConfiguration.RM_PRINCIPAL, "localhost");
    }

    // NM web apps stay off: Guice's servlet filter is process-wide, so the last web app started
    // (an NM's) would answer the RM's /ws/v1/cluster/* with 404s.
    MiniYARNCluster cluster = new MiniYARNCluster(clusterId, nms, 1, 1, nmWeb);
    cluster.init(conf);
    cluster.start();
    if (!cluster.waitForNodeManagersToConnect(60_000)) {
      throw new IllegalStateException("node managers did not register within 60s");
    }

    Configuration eff = cluster.getResourceManager().getConfig();
    File out = new File(confOut);
    File tmp = new File(confOut + ".tmp");
    try (OutputStream os = new FileOutputStream(tmp)) {
      eff.writeXml(os);
    }
    Files.move(tmp.toPath(), out.toPath(), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    if (amConfOut != null) {
      writeAMConf(eff, amSet, new File(amConfOut));
    } else if (!amSet.isEmpty()) {
      usage("--am-set needs --am-conf-out");
    }

    Json j = new Json()
        .put("clusterId", clusterId)
        .put("epoch", cluster.getResourceManager().getRMContext().getEpoch())
        .put("rm", eff.get(YarnConfiguration.RM_ADDRESS))
        .put("scheduler", eff.get(YarnConfiguration.RM_SCHEDULER_ADDRESS))
        .put("admin", eff.get(YarnConfiguration.RM_ADMIN_ADDRESS))
        .put("tracker", eff.get(YarnConfiguration.RM_RESOURCE_TRACKER_ADDRESS))
        .put("web", eff.get(YarnConfiguration.RM_WEBAPP_ADDRESS))
        .put("nms", nms)
        .put("conf", out.getAbsolutePath());
    System.out.println("READY " + j);
    System.out.flush();

    Runtime.getRuntime().addShutdownHook(new Thread(cluster::stop));
    // Block until the parent closes our stdin: the Go test owns the lifetime.
    while (System.in.read() >= 0) {
      // discard
    }
    // A graceful stop, bounded: an NM that ran containers waits 10 s in
    // NonAggregatingLogHandler.serviceStop for log deletions scheduled hours ahead, which
    // nothing here needs. halt skips the shutdown hook (a second stop).
    Thread stopper = new Thread(cluster::stop, "minicluster-stop");
    stopper.setDaemon(true);
    stopper.start();
    stopper.join(3_000);
    Runtime.getRuntime().halt(0);
  }

  /**
   * Writes conf with the overrides applied and marked final: a later resource (an MR AM's
   * job.xml) cannot replace a final value, so every AM on these NMs dials what we say.
   */
  private static void writeAMConf(Configuration eff, Map<String, String> overrides, File out)
      throws java.io.IOException {
    out.getParentFile().mkdirs();
    StringBuilder b = new StringBuilder("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<configuration>\n");
    for (Map.Entry<String, String> e : eff) {
      if (!overrides.containsKey(e.getKey())) {
        property(b, e.getKey(), e.getValue(), false);
      }
    }
    for (Map.Entry<String, String> e : overrides.entrySet()) {
      property(b, e.getKey(), e.getValue(), true);
    }
    b.append("</configuration>\n");
    File tmp = new File(out.getPath() + ".tmp");
    Files.write(tmp.toPath(), b.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
    Files.move(tmp.toPath(), out.toPath(), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
  }

  private static void property(StringBuilder b, String name, String value, boolean fin) {
    b.append("  <property><name>").append(xml(name)).append("</name><value>").append(xml(value))
        .append("</value>").append(fin ? "<final>true</final>" : "").append("</property>\n");
  }

  private static String xml(String s) {
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
  }

  private static void usage(String msg) {
    System.err.println("MiniCluster: " + msg);
    System.exit(2);
  }
}

package org.yarnfed.bench;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.client.api.YarnClientApplication;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.federation.store.impl.ZookeeperFederationStateStore;
import org.apache.hadoop.yarn.server.federation.store.records.SubClusterId;
import org.apache.hadoop.yarn.server.federation.store.records.SubClusterInfo;
import org.apache.hadoop.yarn.server.federation.store.records.SubClusterRegisterRequest;
import org.apache.hadoop.yarn.server.federation.store.records.SubClusterState;

/**
 * The Java side of `yarnfed bench router --peer hadoop`.
 *
 * <pre>
 *   register ZK_ADDRS ID=CLIENT,AMRM,ADMIN,WEB ...
 *       registers each sub-cluster as RUNNING through Hadoop's own
 *       ZookeeperFederationStateStore (the store Hadoop's Router then reads).
 *   client ADDR[,ADDR...] CONCURRENCY MILLIS
 *       Hadoop's YarnClient, thread i against ADDR i mod n: each op is
 *       getNewApplication + submitApplication + getApplicationReport; prints
 *       START after a 2 s warm-up, then one JSON line.
 * </pre>
 */
public final class HadoopPeer {
  private HadoopPeer() {
  }

  public static void main(String[] args) throws Exception {
    if (args.length >= 2 && args[0].equals("register")) {
      register(args);
    } else if (args.length == 4 && args[0].equals("client")) {
      client(args[1], Integer.parseInt(args[2]), Long.parseLong(args[3]));
    } else {
      System.err.println("usage: HadoopPeer register ZK ID=CLIENT,AMRM,ADMIN,WEB... | client ADDR[,ADDR...] CONCURRENCY MILLIS");
      System.exit(2);
    }
  }

  private static void register(String[] args) throws Exception {
    Configuration conf = new YarnConfiguration();
    conf.set("hadoop.zk.address", args[1]);
    ZookeeperFederationStateStore store = new ZookeeperFederationStateStore();
    store.init(conf);
    try {
      for (int i = 2; i < args.length; i++) {
        String[] kv = args[i].split("=", 2);
        String[] a = kv[1].split(",");
        if (a.length != 4) {
          throw new IllegalArgumentException("want ID=CLIENT,AMRM,ADMIN,WEB, got " + args[i]);
        }
        long now = System.currentTimeMillis();
        SubClusterInfo info = SubClusterInfo.newInstance(SubClusterId.newInstance(kv[0]),
            a[1], a[0], a[2], a[3], now, SubClusterState.SC_RUNNING, now, "{}");
        store.registerSubCluster(SubClusterRegisterRequest.newInstance(info));
      }
    } finally {
      store.close();
    }
    System.out.println("REGISTERED " + (args.length - 2));
  }

  /** One client per thread, as separate user processes would have. */
  private static void client(String addrs, int workers, long millis) throws Exception {
    String[] list = addrs.split(",");
    // Warm up: connections and the JIT, outside the measured window.
    run(list, workers, 2000, false);
    run(list, workers, millis, true);
  }

  private static void run(String[] addrs, int workers, long millis, boolean print) throws Exception {
    YarnClient[] clients = new YarnClient[workers];
    for (int i = 0; i < workers; i++) {
      Configuration conf = new YarnConfiguration();
      conf.set(YarnConfiguration.RM_ADDRESS, addrs[i % addrs.length]);
      clients[i] = YarnClient.createYarnClient();
      clients[i].init(conf);
      clients[i].start();
    }
    if (print) {
      // The Go side samples the router's CPU time here and at the result line.
      System.out.println("START");
      System.out.flush();
    }
    List<List<Long>> lat = new ArrayList<>();
    AtomicLong errors = new AtomicLong();
    Thread[] threads = new Thread[workers];
    long start = System.nanoTime();
    long end = start + millis * 1_000_000L;
    for (int i = 0; i < workers; i++) {
      List<Long> mine = new ArrayList<>();
      lat.add(mine);
      YarnClient c = clients[i];
      threads[i] = new Thread(() -> {
        while (System.nanoTime() < end) {
          long t0 = System.nanoTime();
          try {
            op(c);
            mine.add(System.nanoTime() - t0);
          } catch (Exception e) {
            if (errors.incrementAndGet() == 1) {
              e.printStackTrace();
            }
          }
        }
      });
      threads[i].start();
    }
    for (Thread t : threads) {
      t.join();
    }
    long elapsed = System.nanoTime() - start;
    for (YarnClient c : clients) {
      c.stop();
    }
    if (!print) {
      return;
    }
    List<Long> all = new ArrayList<>();
    lat.forEach(all::addAll);
    Collections.sort(all);
    long p50 = all.isEmpty() ? 0 : all.get(all.size() / 2);
    long p99 = all.isEmpty() ? 0 : all.get((all.size() - 1) * 99 / 100);
    System.out.printf("{\"ops\":%d,\"errors\":%d,\"elapsed_ns\":%d,\"p50_ns\":%d,\"p99_ns\":%d}%n",
        all.size(), errors.get(), elapsed, p50, p99);
    System.out.flush();
  }

  private static void op(YarnClient c) throws Exception {
    YarnClientApplication app = c.createApplication();
    ApplicationSubmissionContext ctx = app.getApplicationSubmissionContext();
    ApplicationId id = ctx.getApplicationId();
    ctx.setApplicationName("bench");
    ctx.setQueue("default");
    ctx.setResource(Resource.newInstance(1024, 1));
    ctx.setAMContainerSpec(ContainerLaunchContext.newInstance(null, null,
        Collections.singletonList("sleep 1"), null, null, null));
    c.submitApplication(ctx);
    if (c.getApplicationReport(id) == null) {
      throw new IOException("no report for " + id);
    }
  }
}

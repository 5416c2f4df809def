package org.yarnfed.e2e;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

/** Shared helpers of the command-line drivers: one JSON line per operation on stdout. */
final class Drivers {
  private Drivers() {}

  static final PrintStream OUT = System.out;

  /** Fails fast instead of Hadoop's 15-minute connect retries: a test wants the error now. */
  static void fastFailures(Configuration conf) {
    conf.setLong(YarnConfiguration.RESOURCEMANAGER_CONNECT_MAX_WAIT_MS, 5000);
    conf.setLong(YarnConfiguration.RESOURCEMANAGER_CONNECT_RETRY_INTERVAL_MS, 200);
    conf.setInt("ipc.client.connect.max.retries", 2);
    conf.setInt("ipc.client.connect.max.retries.on.timeouts", 2);
    conf.setInt("ipc.client.connect.timeout", 5000);
  }

  static void ok(String op, Json body) {
    emit(new Json().put("op", op).put("ok", true).put("result", body));
  }

  /** Prints the exception's class (what Hadoop rebuilt from the wire) and its cause chain. */
  static void fail(String op, Throwable t) {
    List<Object> chain = new ArrayList<>();
    for (Throwable c = t.getCause(); c != null && chain.size() < 8; c = c.getCause()) {
      chain.add(c.getClass().getName());
    }
    String remote = null;
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof org.apache.hadoop.ipc.RemoteException) {
        remote = ((org.apache.hadoop.ipc.RemoteException) c).getClassName();
        break;
      }
    }
    emit(new Json().put("op", op).put("ok", false)
        .put("exception", t.getClass().getName())
        .put("remoteClass", remote)
        .put("message", String.valueOf(t.getMessage()))
        .put("causes", chain));
  }

  static synchronized void emit(Json j) {
    OUT.println(j);
    OUT.flush();
  }
}

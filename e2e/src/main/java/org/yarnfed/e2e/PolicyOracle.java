package org.yarnfed.e2e;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.yarn.client.cli.RouterCLI;
import org.apache.hadoop.yarn.server.api.protocolrecords.FederationQueueWeight;
import org.apache.hadoop.yarn.server.federation.policies.dao.WeightedPolicyInfo;
import org.apache.hadoop.yarn.server.federation.store.records.SubClusterIdInfo;

/**
 * Hadoop's own answers for the policy formats yarnfed writes, as oracles for the Go tests. Each
 * argument is one operation, its fields separated by tabs; one JSON line is printed per operation.
 *
 * <ul>
 *   <li>{@code encode<TAB>name<TAB>routerWeights<TAB>amrmWeights<TAB>alpha}: weights as
 *       {@code id:w,id:w} ({@code -} for none), put into HashMaps as Hadoop's router does, then
 *       {@code WeightedPolicyInfo.toByteBuffer()}. Result: the bytes as a string and each map's
 *       iteration order (the order Hadoop writes and lists).
 *   <li>{@code decode<TAB>name<TAB>json}: {@code WeightedPolicyInfo.fromByteBuffer} of the bytes.
 *       Result: what Hadoop read (weights as Float.toString, in iteration order).
 *   <li>{@code xml<TAB>name<TAB>path}: RouterCLI's {@code -policy -bs --format xml} parser on the
 *       file. Result: the FederationQueueWeight list it would send.
 * </ul>
 */
public final class PolicyOracle {
  private PolicyOracle() {}

  /** Reaches RouterCLI's protected XML parser, the code {@code yarn routeradmin -bs} runs. */
  private static final class XmlParser extends RouterCLI {
    XmlParser() {
      super(new org.apache.hadoop.conf.Configuration(false));
    }

    List<FederationQueueWeight> parse(String path) throws Exception {
      return parsePoliciesByXml(path);
    }
  }

  public static void main(String[] args) {
    for (String arg : args) {
      String[] f = arg.split("\t", -1);
      String op = f.length > 1 ? f[0] + ":" + f[1] : arg;
      try {
        switch (f[0]) {
          case "encode":
            Drivers.ok(op, encode(f[2], f[3], Float.parseFloat(f[4])));
            break;
          case "decode":
            Drivers.ok(op, decode(f[2]));
            break;
          case "xml":
            Drivers.ok(op, xml(f[2]));
            break;
          default:
            throw new IllegalArgumentException("unknown operation " + f[0]);
        }
      } catch (Throwable t) {
        Drivers.fail(op, t);
      }
    }
  }

  private static Map<SubClusterIdInfo, Float> weights(String spec) {
    Map<SubClusterIdInfo, Float> m = new HashMap<>();
    if (spec.equals("-")) {
      return m;
    }
    for (String kv : spec.split(",")) {
      int i = kv.lastIndexOf(':');
      m.put(new SubClusterIdInfo(kv.substring(0, i)), Float.parseFloat(kv.substring(i + 1)));
    }
    return m;
  }

  private static Json encode(String router, String amrm, float alpha) throws Exception {
    WeightedPolicyInfo info = new WeightedPolicyInfo();
    info.setRouterPolicyWeights(weights(router));
    info.setAMRMPolicyWeights(weights(amrm));
    info.setHeadroomAlpha(alpha);
    ByteBuffer bb = info.toByteBuffer();
    byte[] b = new byte[bb.remaining()];
    bb.get(b);
    return new Json().put("json", new String(b, StandardCharsets.UTF_8))
        .put("router", order(info.getRouterPolicyWeights()))
        .put("amrm", order(info.getAMRMPolicyWeights()));
  }

  private static Json decode(String json) throws Exception {
    WeightedPolicyInfo info = WeightedPolicyInfo.fromByteBuffer(
        ByteBuffer.wrap(json.getBytes(StandardCharsets.UTF_8)));
    return new Json().put("router", order(info.getRouterPolicyWeights()))
        .put("amrm", order(info.getAMRMPolicyWeights()))
        .put("headroomAlpha", Float.toString(info.getHeadroomAlpha()));
  }

  /** The map's entries in iteration order, as {@code id:Float.toString(w)}. */
  private static List<Object> order(Map<SubClusterIdInfo, Float> m) {
    List<Object> out = new ArrayList<>();
    if (m == null) {
      return out;
    }
    for (Map.Entry<SubClusterIdInfo, Float> e : m.entrySet()) {
      out.add(e.getKey().toId().getId() + ":" + e.getValue());
    }
    return out;
  }

  private static Json xml(String path) throws Exception {
    List<Object> queues = new ArrayList<>();
    for (FederationQueueWeight w : new XmlParser().parse(path)) {
      queues.add(new Json().put("queue", w.getQueue())
          .put("routerWeight", w.getRouterWeight())
          .put("amrmWeight", w.getAmrmWeight())
          .put("headroomAlpha", w.getHeadRoomAlpha()));
    }
    return new Json().put("queues", queues);
  }
}

package org.yarnfed.e2e;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.EnumSet;
import javax.servlet.DispatcherType;
import javax.servlet.http.Cookie;
import javax.servlet.http.HttpServlet;
import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

import org.apache.hadoop.security.authentication.server.AuthenticationFilter;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.servlet.FilterHolder;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;

/**
 * A web endpoint behind Hadoop's own AuthenticationFilter in Kerberos mode (the
 * KerberosAuthenticationHandler an RM's web port runs with
 * hadoop.http.authentication.type=kerberos: the JDK's SPNEGO acceptor, Hadoop's signed
 * hadoop.auth cookie), serving RM-shaped /ws/v1/cluster/info and /metrics, for our Go
 * SPNEGO client to log in to.
 *
 * <p>Usage: KerberosWebServer --krb5conf FILE --principal HTTP/localhost@REALM --keytab FILE.
 * Prints {"op":"ready","result":{"port":N}}, then for every request that reached the servlet
 * {"op":"request","result":{"path","user","negotiate","cookie"}} (whether it carried an
 * Authorization header / a hadoop.auth cookie), and serves until stdin closes.
 */
public final class KerberosWebServer {
  private KerberosWebServer() {}

  public static void main(String[] args) throws Exception {
    KerberosArgs krb = KerberosArgs.parse(args, KerberosArgs.NONE);
    Server server = new Server(new InetSocketAddress("127.0.0.1", 0));
    ServletContextHandler ctx = new ServletContextHandler();
    ctx.setContextPath("/");
    FilterHolder auth = new FilterHolder(AuthenticationFilter.class);
    auth.setInitParameter(AuthenticationFilter.AUTH_TYPE, "kerberos");
    auth.setInitParameter("kerberos.principal", krb.principal);
    auth.setInitParameter("kerberos.keytab", krb.keytab);
    auth.setInitParameter("kerberos.name.rules", "DEFAULT"); // hadoop.security.auth_to_local
    auth.setInitParameter(AuthenticationFilter.SIGNER_SECRET_PROVIDER, "random");
    auth.setInitParameter(AuthenticationFilter.AUTH_TOKEN_VALIDITY, "3600");
    ctx.addFilter(auth, "/*", EnumSet.of(DispatcherType.REQUEST));
    ctx.addServlet(new ServletHolder(new ClusterServlet()), "/ws/v1/cluster/*");
    server.setHandler(ctx);
    server.start();
    int port = ((ServerConnector) server.getConnectors()[0]).getLocalPort();
    Drivers.ok("ready", new Json().put("port", port));
    InputStream in = System.in;
    while (in.read() >= 0) {
      // serve until the test closes stdin
    }
    server.stop();
    System.exit(0);
  }

  private static final class ClusterServlet extends HttpServlet {
    private static final long STARTED = System.currentTimeMillis() - 3_600_000L;

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
      boolean cookie = false;
      if (req.getCookies() != null) {
        for (Cookie c : req.getCookies()) {
          cookie |= AuthenticatedCookieName.NAME.equals(c.getName());
        }
      }
      String path = req.getPathInfo() == null ? "" : req.getPathInfo();
      Drivers.ok("request", new Json().put("path", path).put("user", req.getRemoteUser())
          .put("negotiate", req.getHeader("Authorization") != null).put("cookie", cookie));
      String body;
      switch (path) {
        case "/info":
          body = "{\"clusterInfo\":{\"id\":42,\"haState\":\"ACTIVE\",\"startedOn\":" + STARTED
              + ",\"resourceManagerVersion\":\"3.4.3\"}}";
          break;
        case "/metrics":
          body = "{\"clusterMetrics\":{\"totalNodes\":3,\"activeNodes\":3,\"totalMB\":12288,"
              + "\"availableMB\":12288,\"totalVirtualCores\":12,\"availableVirtualCores\":12}}";
          break;
        default:
          resp.sendError(HttpServletResponse.SC_NOT_FOUND);
          return;
      }
      resp.setContentType("application/json");
      resp.getOutputStream().write(body.getBytes(StandardCharsets.UTF_8));
    }
  }

  /** The cookie name AuthenticatedURL and AuthenticationFilter use. */
  private static final class AuthenticatedCookieName {
    static final String NAME = org.apache.hadoop.security.authentication.client.AuthenticatedURL.AUTH_COOKIE;
  }
}

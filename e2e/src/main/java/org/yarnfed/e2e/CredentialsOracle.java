package org.yarnfed.e2e;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

import org.apache.hadoop.io.Text;
import org.apache.hadoop.security.Credentials;
import org.apache.hadoop.security.token.Token;
import org.apache.hadoop.security.token.TokenIdentifier;

/**
 * Hadoop's own Credentials token storage, as an oracle for internal/hadoopcreds. Each argument is
 * one operation, fields separated by tabs; one JSON line is printed per operation.
 *
 * <ul>
 *   <li>{@code write<TAB>name<TAB>format<TAB>path<TAB>tokens<TAB>secrets}: builds Credentials and
 *       writes them to the file, {@code format} {@code default} (writeTokenStorageToStream, what
 *       clients and the RM put in a launch context), {@code writable} or {@code protobuf}.
 *       {@code tokens}: {@code alias|identifierHex|passwordHex|kind|service} joined by {@code ;};
 *       {@code secrets}: {@code alias|valueHex} joined by {@code ;}; {@code -} for none.
 *   <li>{@code read<TAB>name<TAB>path}: readTokenStorageFile; the result lists what Hadoop read.
 * </ul>
 */
public final class CredentialsOracle {
  private CredentialsOracle() {}

  private static final HexFormat HEX = HexFormat.of();

  public static void main(String[] args) {
    for (String arg : args) {
      String[] f = arg.split("\t", -1);
      String op = f.length > 1 ? f[0] + ":" + f[1] : arg;
      try {
        switch (f[0]) {
          case "write":
            write(f[2], f[3], f[4], f[5]);
            Drivers.ok(op, new Json().put("path", f[3]));
            break;
          case "read":
            Drivers.ok(op, read(f[2]));
            break;
          default:
            throw new IllegalArgumentException("unknown operation " + f[0]);
        }
      } catch (Throwable t) {
        Drivers.fail(op, t);
      }
    }
  }

  private static void write(String format, String path, String tokens, String secrets)
      throws Exception {
    Credentials c = new Credentials();
    if (!tokens.equals("-")) {
      for (String spec : tokens.split(";")) {
        String[] p = spec.split("\\|", -1);
        Token<TokenIdentifier> t = new Token<>(HEX.parseHex(p[1]), HEX.parseHex(p[2]),
            new Text(p[3]), new Text(p[4]));
        c.addToken(new Text(p[0]), t);
      }
    }
    if (!secrets.equals("-")) {
      for (String spec : secrets.split(";")) {
        String[] p = spec.split("\\|", -1);
        c.addSecretKey(new Text(p[0]), HEX.parseHex(p[1]));
      }
    }
    Credentials.SerializedFormat f = format.equals("default") ? null
        : Credentials.SerializedFormat.valueOf(format.toUpperCase(java.util.Locale.ROOT));
    try (DataOutputStream out = new DataOutputStream(new FileOutputStream(path))) {
      if (f == null) {
        c.writeTokenStorageToStream(out); // what clients and the RM write
      } else {
        c.writeTokenStorageToStream(out, f);
      }
    }
  }

  private static Json read(String path) throws Exception {
    Credentials c = new Credentials();
    try (DataInputStream in = new DataInputStream(new FileInputStream(path))) {
      c.readTokenStorageStream(in);
    }
    List<Object> tokens = new ArrayList<>();
    for (Text alias : c.getTokenMap().keySet()) {
      Token<? extends TokenIdentifier> t = c.getToken(alias);
      tokens.add(alias + "|" + HEX.formatHex(t.getIdentifier()) + "|"
          + HEX.formatHex(t.getPassword()) + "|" + t.getKind() + "|" + t.getService());
    }
    List<Object> secrets = new ArrayList<>();
    for (Text alias : c.getAllSecretKeys()) {
      secrets.add(alias + "|" + HEX.formatHex(c.getSecretKey(alias)));
    }
    return new Json().put("tokens", tokens).put("secrets", secrets);
  }
}

package org.yarnfed.e2e;

/**
 * The arguments both Kerberos test servers take: --krb5conf FILE (which also turns off the JDK's
 * KDC referrals), --principal PRINCIPAL and --keytab FILE. A server with arguments of its own
 * reads them in an {@link Extra}.
 */
final class KerberosArgs {
  /** Reads the argument at args[i] and its values; returns the index of the last one it used. */
  interface Extra {
    int take(String[] args, int i);
  }

  /** The Extra of a server with no arguments of its own. */
  static final Extra NONE = KerberosArgs::unknown;

  final String principal;
  final String keytab;

  private KerberosArgs(String principal, String keytab) {
    this.principal = principal;
    this.keytab = keytab;
  }

  /** Reads args in order; an argument neither this nor extra knows is an error. */
  static KerberosArgs parse(String[] args, Extra extra) {
    String principal = null;
    String keytab = null;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--krb5conf":
          System.setProperty("java.security.krb5.conf", args[++i]);
          System.setProperty("sun.security.krb5.disableReferrals", "true");
          break;
        case "--principal":
          principal = args[++i];
          break;
        case "--keytab":
          keytab = args[++i];
          break;
        default:
          i = extra.take(args, i);
      }
    }
    return new KerberosArgs(principal, keytab);
  }

  /** Refuses args[i]: the end of every Extra's switch. */
  static int unknown(String[] args, int i) {
    throw new IllegalArgumentException("unknown argument " + args[i]);
  }
}

// JavaSasl drives the JDK's DIGEST-MD5 SaslServer/SaslClient (the mechanism
// Hadoop uses) over a line protocol on stdin/stdout, so Go tests can check
// interoperability with the real thing. Tokens are hex; "-" is an empty token.
//
//   server <qops> <serverName> <user> <pass>  -> challenge
//   sresp <token>                             -> rspauth | ERR msg
//   client <qops> <cipher|-> <serverName> <user> <pass> -> OK
//   cchal <token>                             -> response | ERR msg
//   cfinal <token>                            -> OK | ERR msg
//   wrap s|c <token>, unwrap s|c <token>      -> token | ERR msg
//   qop s|c                                   -> negotiated qop
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import javax.security.auth.callback.Callback;
import javax.security.auth.callback.CallbackHandler;
import javax.security.auth.callback.NameCallback;
import javax.security.auth.callback.PasswordCallback;
import javax.security.sasl.AuthorizeCallback;
import javax.security.sasl.RealmCallback;
import javax.security.sasl.RealmChoiceCallback;
import javax.security.sasl.Sasl;
import javax.security.sasl.SaslClient;
import javax.security.sasl.SaslServer;

public class JavaSasl {
    static final HexFormat HEX = HexFormat.of();

    static byte[] dec(String s) { return s.equals("-") ? new byte[0] : HEX.parseHex(s); }
    static String enc(byte[] b) { return b == null || b.length == 0 ? "-" : HEX.formatHex(b); }

    static CallbackHandler handler(String user, String pass, boolean server) {
        return callbacks -> {
            for (Callback cb : callbacks) {
                if (cb instanceof NameCallback nc) {
                    if (!server) nc.setName(user);
                    else if (!user.equals(nc.getDefaultName())) throw new SecurityException("unknown user " + nc.getDefaultName());
                } else if (cb instanceof PasswordCallback pc) {
                    pc.setPassword(pass.toCharArray());
                } else if (cb instanceof RealmCallback rc) {
                    rc.setText(rc.getDefaultText());
                } else if (cb instanceof RealmChoiceCallback rcc) {
                    rcc.setSelectedIndex(0);
                } else if (cb instanceof AuthorizeCallback ac) {
                    ac.setAuthorized(ac.getAuthenticationID().equals(ac.getAuthorizationID()));
                    if (ac.isAuthorized()) ac.setAuthorizedID(ac.getAuthorizationID());
                }
            }
        };
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        SaslServer srv = null;
        SaslClient cli = null;
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.trim().split(" ");
            String out;
            try {
                switch (f[0]) {
                    case "server" -> {
                        Map<String, Object> props = new HashMap<>();
                        props.put(Sasl.QOP, f[1]);
                        srv = Sasl.createSaslServer("DIGEST-MD5", "", f[2], props, handler(f[3], f[4], true));
                        out = enc(srv.evaluateResponse(new byte[0]));
                    }
                    case "sresp" -> out = enc(srv.evaluateResponse(dec(f[1])));
                    case "client" -> {
                        Map<String, Object> props = new HashMap<>();
                        props.put(Sasl.QOP, f[1]);
                        if (!f[2].equals("-")) props.put("com.sun.security.sasl.digest.cipher", f[2]);
                        cli = Sasl.createSaslClient(new String[] {"DIGEST-MD5"}, null, "", f[3], props, handler(f[4], f[5], false));
                        out = "OK";
                    }
                    case "cchal" -> out = enc(cli.evaluateChallenge(dec(f[1])));
                    case "cfinal" -> {
                        cli.evaluateChallenge(dec(f[1]));
                        out = cli.isComplete() ? "OK" : "ERR not complete";
                    }
                    case "wrap" -> {
                        byte[] b = dec(f[2]);
                        out = enc(f[1].equals("s") ? srv.wrap(b, 0, b.length) : cli.wrap(b, 0, b.length));
                    }
                    case "unwrap" -> {
                        byte[] b = dec(f[2]);
                        out = enc(f[1].equals("s") ? srv.unwrap(b, 0, b.length) : cli.unwrap(b, 0, b.length));
                    }
                    case "qop" -> out = String.valueOf(f[1].equals("s") ? srv.getNegotiatedProperty(Sasl.QOP) : cli.getNegotiatedProperty(Sasl.QOP));
                    default -> out = "ERR unknown command " + f[0];
                }
            } catch (Exception e) {
                out = "ERR " + e.toString().replace('\n', ' ');
            }
            System.out.println(out);
            System.out.flush();
        }
    }
}

package org.yarnfed.e2e;

import java.net.URI;
import java.security.PrivilegedExceptionAction;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.security.UserGroupInformation;

/**
 * Hadoop's own HDFS client against a NameNode, for the launcher's hdfs:// tests: it puts what the
 * launcher must fetch, as an AM's client would stage it. The first argument is the file system URI
 * (hdfs://host:port); each further argument is one operation, fields separated by tabs, and one
 * JSON line is printed per operation (name {@code op:first field}).
 *
 * <ul>
 *   <li>{@code ready<TAB>seconds}: retries a one-byte write until the NameNode is out of safe mode
 *       and a DataNode takes blocks.
 *   <li>{@code home<TAB>user}: as the superuser, makes /user/USER owned by USER, mode 0700.
 *   <li>{@code put<TAB>user<TAB>local<TAB>remote}: as USER, copies the local file or directory to
 *       the remote path (overwriting), then prints the remote status.
 *   <li>{@code stat<TAB>remote}: prints the status: length, modification time (ms), directory.
 * </ul>
 */
public final class HdfsDriver {
  private HdfsDriver() {}

  public static void main(String[] args) {
    URI uri = URI.create(args[0]);
    Configuration conf = new Configuration();
    Drivers.fastFailures(conf);
    conf.setInt("dfs.replication", 1);
    // Small blocks, so a file of a few MB spans blocks and the fetch crosses them.
    conf.setLong("dfs.blocksize", 4L << 20);
    for (int i = 1; i < args.length; i++) {
      String[] f = args[i].split("\t", -1);
      String op = f.length > 1 ? f[0] + ":" + f[1] : args[i];
      try {
        switch (f[0]) {
          case "ready":
            Drivers.ok(op, ready(uri, conf, Integer.parseInt(f[1])));
            break;
          case "home":
            {
              FileSystem fs = FileSystem.newInstance(uri, conf);
              Path home = new Path("/user/" + f[1]);
              fs.mkdirs(home);
              fs.setOwner(home, f[1], null);
              fs.setPermission(home, new FsPermission((short) 0700));
              Drivers.ok(op, status(fs.getFileStatus(home)));
              fs.close();
              break;
            }
          case "put":
            {
              UserGroupInformation ugi = UserGroupInformation.createRemoteUser(f[1]);
              Json st =
                  ugi.doAs(
                      (PrivilegedExceptionAction<Json>)
                          () -> {
                            FileSystem fs = FileSystem.newInstance(uri, conf);
                            try {
                              Path remote = new Path(f[3]);
                              fs.copyFromLocalFile(false, true, new Path(f[2]), remote);
                              return status(fs.getFileStatus(remote));
                            } finally {
                              fs.close();
                            }
                          });
              Drivers.ok(op, st);
              break;
            }
          case "stat":
            {
              FileSystem fs = FileSystem.newInstance(uri, conf);
              Drivers.ok(op, status(fs.getFileStatus(new Path(f[1]))));
              fs.close();
              break;
            }
          default:
            throw new IllegalArgumentException("unknown operation " + f[0]);
        }
      } catch (Throwable t) {
        Drivers.fail(op, t);
      }
    }
  }

  private static Json status(FileStatus st) {
    return new Json()
        .put("path", st.getPath().toUri().getPath())
        .put("len", st.getLen())
        .put("mtime", st.getModificationTime())
        .put("dir", st.isDirectory())
        .put("owner", st.getOwner());
  }

  private static Json ready(URI uri, Configuration conf, int seconds) throws Exception {
    long deadline = System.nanoTime() + seconds * 1_000_000_000L;
    Exception last = null;
    int tries = 0;
    while (System.nanoTime() < deadline) {
      tries++;
      try (FileSystem fs = FileSystem.newInstance(uri, conf)) {
        Path probe = new Path("/tmp/.ready-probe");
        try (FSDataOutputStream out = fs.create(probe, true)) {
          out.write(1);
        }
        fs.delete(probe, false);
        return new Json().put("tries", tries);
      } catch (Exception e) {
        last = e;
        Thread.sleep(250);
      }
    }
    throw new Exception("HDFS not ready after " + seconds + " s (" + tries + " tries)", last);
  }
}

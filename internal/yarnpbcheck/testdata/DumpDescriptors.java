// Writes the protobuf descriptors compiled into Hadoop's jars (and their
// imports) as one FileDescriptorSet, so yarnpbcheck can compare our .proto
// files with what Hadoop really ships. Usage: hadoop-descriptors.sh.
import java.io.FileOutputStream;
import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.hadoop.thirdparty.protobuf.DescriptorProtos.FileDescriptorSet;
import org.apache.hadoop.thirdparty.protobuf.Descriptors.FileDescriptor;

public class DumpDescriptors {
  public static void main(String[] args) throws Exception {
    if (args.length < 2) {
      System.err.println("usage: DumpDescriptors OUT.pb OUTER_CLASS...");
      System.exit(2);
    }
    Map<String, FileDescriptor> files = new LinkedHashMap<>();
    for (int i = 1; i < args.length; i++) {
      Object fd = Class.forName(args[i]).getMethod("getDescriptor").invoke(null);
      add((FileDescriptor) fd, files);
    }
    FileDescriptorSet.Builder set = FileDescriptorSet.newBuilder();
    for (FileDescriptor fd : files.values()) {
      set.addFile(fd.toProto());
      System.err.println(fd.getName());
    }
    try (FileOutputStream out = new FileOutputStream(args[0])) {
      set.build().writeTo(out);
    }
  }

  // Dependencies first, each file once.
  private static void add(FileDescriptor fd, Map<String, FileDescriptor> files) {
    if (files.containsKey(fd.getName())) {
      return;
    }
    for (FileDescriptor dep : fd.getDependencies()) {
      add(dep, files);
    }
    files.put(fd.getName(), fd);
  }
}

package org.yarnfed.e2e;

import java.util.List;

/** Minimal ordered JSON object writer, so the drivers need nothing beyond Hadoop's classpath. */
final class Json {
  private final StringBuilder sb = new StringBuilder("{");
  private boolean first = true;

  Json put(String key, Object value) {
    if (!first) {
      sb.append(',');
    }
    first = false;
    quote(sb, key);
    sb.append(':');
    value(sb, value);
    return this;
  }

  private static void value(StringBuilder sb, Object value) {
    if (value == null) {
      sb.append("null");
    } else if (value instanceof Json) {
      sb.append(value.toString());
    } else if (value instanceof Number || value instanceof Boolean) {
      sb.append(value);
    } else if (value instanceof List) {
      sb.append('[');
      boolean f = true;
      for (Object o : (List<?>) value) {
        if (!f) {
          sb.append(',');
        }
        f = false;
        value(sb, o);
      }
      sb.append(']');
    } else {
      quote(sb, value.toString());
    }
  }

  static void quote(StringBuilder sb, String s) {
    sb.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"': sb.append("\\\""); break;
        case '\\': sb.append("\\\\"); break;
        case '\n': sb.append("\\n"); break;
        case '\r': sb.append("\\r"); break;
        case '\t': sb.append("\\t"); break;
        default:
          if (c < 0x20) {
            sb.append(String.format("\\u%04x", (int) c));
          } else {
            sb.append(c);
          }
      }
    }
    sb.append('"');
  }

  @Override
  public String toString() {
    return sb + "}";
  }
}

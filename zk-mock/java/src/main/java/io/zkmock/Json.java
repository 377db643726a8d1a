package io.zkmock;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small JSON reader and writer for the admin interface's answers: objects
 * become {@code Map<String, Object>} (in order), arrays {@code List<Object>},
 * numbers {@code Long} or {@code Double}, and {@code true}, {@code false},
 * {@code null} themselves. No dependency beyond the JDK.
 */
public final class Json {
    private final String text;
    private int at;

    private Json(String text) {
        this.text = text;
    }

    /** Parses one JSON value; throws {@link IllegalArgumentException} with the offset on bad input. */
    public static Object parse(String text) {
        Json p = new Json(text);
        p.space();
        Object v = p.value();
        p.space();
        if (p.at != text.length()) {
            throw p.error("trailing characters");
        }
        return v;
    }

    /** Writes a value of the kinds {@link #parse} returns (and any {@link Number} or {@link CharSequence}). */
    public static String write(Object v) {
        StringBuilder out = new StringBuilder();
        write(v, out);
        return out.toString();
    }

    private static void write(Object v, StringBuilder out) {
        if (v == null) {
            out.append("null");
        } else if (v instanceof Boolean || v instanceof Number) {
            out.append(v);
        } else if (v instanceof CharSequence) {
            quote(v.toString(), out);
        } else if (v instanceof Map) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (!first) {
                    out.append(',');
                }
                first = false;
                quote(String.valueOf(e.getKey()), out);
                out.append(':');
                write(e.getValue(), out);
            }
            out.append('}');
        } else if (v instanceof Iterable) {
            out.append('[');
            boolean first = true;
            for (Object x : (Iterable<?>) v) {
                if (!first) {
                    out.append(',');
                }
                first = false;
                write(x, out);
            }
            out.append(']');
        } else {
            throw new IllegalArgumentException("cannot write " + v.getClass() + " as JSON");
        }
    }

    private static void quote(String s, StringBuilder out) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
            }
        }
        out.append('"');
    }

    private IllegalArgumentException error(String what) {
        return new IllegalArgumentException("bad JSON at offset " + at + ": " + what);
    }

    private void space() {
        while (at < text.length() && Character.isWhitespace(text.charAt(at))) {
            at++;
        }
    }

    private char peek() {
        if (at >= text.length()) {
            throw error("unexpected end");
        }
        return text.charAt(at);
    }

    private Object value() {
        char c = peek();
        switch (c) {
            case '{': return object();
            case '[': return array();
            case '"': return string();
            case 't': return literal("true", Boolean.TRUE);
            case 'f': return literal("false", Boolean.FALSE);
            case 'n': return literal("null", null);
            default:
                if (c == '-' || (c >= '0' && c <= '9')) {
                    return number();
                }
                throw error("unexpected '" + c + "'");
        }
    }

    private Object literal(String word, Object v) {
        if (!text.startsWith(word, at)) {
            throw error("expected " + word);
        }
        at += word.length();
        return v;
    }

    private Map<String, Object> object() {
        Map<String, Object> m = new LinkedHashMap<>();
        at++;
        space();
        if (peek() == '}') {
            at++;
            return m;
        }
        while (true) {
            space();
            if (peek() != '"') {
                throw error("expected a key");
            }
            String k = string();
            space();
            if (peek() != ':') {
                throw error("expected ':'");
            }
            at++;
            space();
            m.put(k, value());
            space();
            char c = peek();
            at++;
            if (c == '}') {
                return m;
            }
            if (c != ',') {
                throw error("expected ',' or '}'");
            }
        }
    }

    private List<Object> array() {
        List<Object> l = new ArrayList<>();
        at++;
        space();
        if (peek() == ']') {
            at++;
            return l;
        }
        while (true) {
            space();
            l.add(value());
            space();
            char c = peek();
            at++;
            if (c == ']') {
                return l;
            }
            if (c != ',') {
                throw error("expected ',' or ']'");
            }
        }
    }

    private String string() {
        StringBuilder s = new StringBuilder();
        at++;
        while (true) {
            char c = peek();
            at++;
            if (c == '"') {
                return s.toString();
            }
            if (c != '\\') {
                s.append(c);
                continue;
            }
            char e = peek();
            at++;
            switch (e) {
                case '"': s.append('"'); break;
                case '\\': s.append('\\'); break;
                case '/': s.append('/'); break;
                case 'b': s.append('\b'); break;
                case 'f': s.append('\f'); break;
                case 'n': s.append('\n'); break;
                case 'r': s.append('\r'); break;
                case 't': s.append('\t'); break;
                case 'u':
                    if (at + 4 > text.length()) {
                        throw error("short \\u escape");
                    }
                    s.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
                    at += 4;
                    break;
                default:
                    throw error("bad escape \\" + e);
            }
        }
    }

    private Number number() {
        int start = at;
        if (peek() == '-') {
            at++;
        }
        boolean real = false;
        while (at < text.length()) {
            char c = text.charAt(at);
            if (c >= '0' && c <= '9') {
                at++;
            } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
                real = true;
                at++;
            } else {
                break;
            }
        }
        String n = text.substring(start, at);
        try {
            return real ? (Number) Double.valueOf(n) : (Number) Long.valueOf(n);
        } catch (NumberFormatException ex) {
            throw error("bad number " + n);
        }
    }
}

// A fake RootTrace control plane and ingest endpoint on a raw ServerSocket (127.0.0.1,
// random port), honest or hostile on demand. Tests only; modeled on sdk/python fakecp.py.
package dev.roottrace;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.zip.GZIPInputStream;

/**
 * Modes for GET /api/v1/sdk/config: normal (etag + held wait, 200/304), body (200 with
 * rawBody), huge (50 MB body with Content-Length), huge_close (50 MB, no length), drip (headers
 * one byte every 50 ms), status (answer `code`), reset (TCP RST), hang (never answer), churn
 * (200 with a new etag at once, every time), fast304 (304 at once, ignoring wait), codes (the
 * next status of `codes` at once, the last one repeated).
 */
final class FakeControlPlane implements AutoCloseable {
    static final int BIG = 50 * 1024 * 1024;

    static final class Poll {
        final long t; // System.nanoTime() on arrival
        final Map<String, String> params; // query parameters

        Poll(long t, Map<String, String> params) {
            this.t = t;
            this.params = params;
        }
    }

    static final class Upload {
        final long t; // System.nanoTime() on arrival
        final Map<String, String> params; // query parameters
        final PprofDecode.Profile profile; // decoded body
        final int answer; // status we answered

        Upload(long t, Map<String, String> params, PprofDecode.Profile profile, int answer) {
            this.t = t;
            this.params = params;
            this.profile = profile;
            this.answer = answer;
        }
    }

    final Map<String, Object> config = new LinkedHashMap<>(); // guarded by this
    int version = 1; // guarded by this
    volatile String mode = "normal";
    volatile byte[] rawBody = new byte[0];
    volatile int code = 500;
    private final List<Integer> codes = new ArrayList<>(); // guarded by this; the last repeats
    /** The polls the "codes" mode answered, in order (guarded by this). */
    private final List<Map<String, String>> coded = new ArrayList<>();
    final List<Poll> polls = new ArrayList<>(); // guarded by this
    final List<Upload> uploads = new ArrayList<>(); // guarded by this
    volatile Function<Map<String, String>, Integer> uploadAnswer = p -> 201;
    volatile boolean uploadHang;
    private volatile boolean closed;
    private final ServerSocket server;
    private final List<Socket> sockets = new ArrayList<>();

    FakeControlPlane() throws IOException {
        config.put("enabled", false);
        config.put("type", "wall");
        config.put("sampling_interval_us", 50000);
        config.put("upload_interval_s", 60);
        config.put("max_stack_depth", 256);
        config.put("poll_interval_s", 10);
        server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread t = new Thread(this::acceptLoop, "fakecp-accept");
        t.setDaemon(true);
        t.start();
    }

    String url() {
        return "http://127.0.0.1:" + server.getLocalPort();
    }

    synchronized String etag() {
        return "v" + version;
    }

    synchronized void setConfig(Object... kv) {
        for (int i = 0; i < kv.length; i += 2) {
            config.put((String) kv[i], kv[i + 1]);
        }
        version++;
        notifyAll();
    }

    synchronized void setMode(String m) {
        mode = m;
        notifyAll();
    }

    /** Answers the next polls with codes, one each, the last one repeated until the mode
     *  changes. */
    synchronized void setCodes(Integer... c) {
        codes.clear();
        codes.addAll(List.of(c));
        setMode("codes");
    }

    synchronized List<Map<String, String>> coded() {
        return new ArrayList<>(coded);
    }

    synchronized List<Poll> polls() {
        return new ArrayList<>(polls);
    }

    synchronized List<Upload> uploads() {
        return new ArrayList<>(uploads);
    }

    /** Waits until at least n uploads arrived (or timeout); returns them. */
    synchronized List<Upload> waitUploads(int n, double timeoutS) throws InterruptedException {
        long end = System.nanoTime() + (long) (timeoutS * 1e9);
        while (uploads.size() < n && System.nanoTime() < end) {
            wait(Math.max(1, (end - System.nanoTime()) / 1_000_000));
        }
        return new ArrayList<>(uploads);
    }

    @Override
    public void close() {
        closed = true;
        synchronized (this) {
            notifyAll();
        }
        try {
            server.close();
        } catch (IOException e) {
            // closing anyway
        }
        synchronized (sockets) {
            for (Socket s : sockets) {
                try {
                    s.close();
                } catch (IOException e) {
                    // closing anyway
                }
            }
        }
    }

    private void acceptLoop() {
        while (!closed) {
            try {
                Socket s = server.accept();
                synchronized (sockets) {
                    sockets.add(s);
                }
                Thread t = new Thread(() -> handle(s), "fakecp-conn");
                t.setDaemon(true);
                t.start();
            } catch (IOException e) {
                return;
            }
        }
    }

    private void handle(Socket s) {
        try (s) {
            InputStream in = s.getInputStream();
            OutputStream out = s.getOutputStream();
            String head = readHead(in);
            if (head == null) {
                return;
            }
            String[] lines = head.split("\r\n");
            String[] req = lines[0].split(" ");
            Map<String, String> headers = new HashMap<>();
            for (int i = 1; i < lines.length; i++) {
                int c = lines[i].indexOf(':');
                if (c > 0) {
                    headers.put(lines[i].substring(0, c).trim().toLowerCase(), lines[i].substring(c + 1).trim());
                }
            }
            String target = req[1];
            Map<String, String> params = params(target);
            if (req[0].equals("POST")) {
                int n = Integer.parseInt(headers.getOrDefault("content-length", "0"));
                upload(out, params, in.readNBytes(n));
            } else {
                config(s, out, params);
            }
        } catch (Exception e) {
            // the client went away
        }
    }

    private static String readHead(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        int c;
        int state = 0;
        while ((c = in.read()) >= 0) {
            b.write(c);
            state = (c == '\r' || c == '\n') ? state + 1 : 0;
            if (state == 4) {
                return b.toString(StandardCharsets.ISO_8859_1);
            }
        }
        return null;
    }

    static Map<String, String> params(String target) {
        Map<String, String> m = new LinkedHashMap<>();
        int q = target.indexOf('?');
        if (q < 0) {
            return m;
        }
        for (String kv : target.substring(q + 1).split("&")) {
            int e = kv.indexOf('=');
            String k = e < 0 ? kv : kv.substring(0, e);
            String v = e < 0 ? "" : kv.substring(e + 1);
            m.put(URLDecoder.decode(k, StandardCharsets.UTF_8), URLDecoder.decode(v, StandardCharsets.UTF_8));
        }
        return m;
    }

    private static void send(OutputStream out, int code, byte[] body, String... headers) throws IOException {
        StringBuilder h = new StringBuilder("HTTP/1.1 " + code + " X\r\nConnection: close\r\n");
        for (String x : headers) {
            h.append(x).append("\r\n");
        }
        if (code != 304) {
            h.append("Content-Length: ").append(body.length).append("\r\n");
        }
        h.append("\r\n");
        out.write(h.toString().getBytes(StandardCharsets.ISO_8859_1));
        out.write(body);
        out.flush();
    }

    private synchronized byte[] configBody() {
        StringBuilder b = new StringBuilder("{");
        for (Map.Entry<String, Object> e : config.entrySet()) {
            Object v = e.getValue();
            b.append('"').append(e.getKey()).append("\":")
                    .append(v instanceof String ? "\"" + v + "\"" : String.valueOf(v)).append(',');
        }
        b.append("\"etag\":\"").append(etag()).append("\"}");
        return b.toString().getBytes(StandardCharsets.UTF_8);
    }

    private void config(Socket s, OutputStream out, Map<String, String> params) throws Exception {
        String m;
        synchronized (this) {
            polls.add(new Poll(System.nanoTime(), params));
            m = mode;
        }
        if (m.equals("normal")) {
            String etag = params.get("etag");
            double wait = Double.parseDouble(params.getOrDefault("wait", "0"));
            boolean unchanged;
            byte[] body;
            String tag;
            synchronized (this) {
                long end = System.nanoTime() + (long) (Math.min(Math.max(wait, 0), 30) * 1e9);
                while (etag != null && etag.equals(etag()) && mode.equals("normal") && !closed) {
                    long left = end - System.nanoTime();
                    if (left <= 0) {
                        break;
                    }
                    wait(Math.max(1, left / 1_000_000));
                }
                m = mode;
                unchanged = etag != null && etag.equals(etag());
                body = configBody();
                tag = etag();
            }
            if (m.equals("normal")) {
                if (unchanged) {
                    send(out, 304, new byte[0]);
                } else {
                    send(out, 200, body, "ETag: \"" + tag + "\"", "Content-Type: application/json");
                }
                return;
            }
        }
        hostile(m, s, out, params);
    }

    private void hostile(String m, Socket s, OutputStream out, Map<String, String> params) throws Exception {
        switch (m) {
            case "body":
                send(out, 200, rawBody, "Content-Type: application/json");
                break;
            case "huge":
            case "huge_close":
                out.write(("HTTP/1.1 200 OK\r\nConnection: close\r\n"
                        + (m.equals("huge") ? "Content-Length: " + BIG + "\r\n" : "") + "\r\n")
                        .getBytes(StandardCharsets.ISO_8859_1));
                out.write("{\"enabled\": true, \"pad\": \"".getBytes(StandardCharsets.ISO_8859_1));
                byte[] chunk = new byte[1024 * 1024];
                java.util.Arrays.fill(chunk, (byte) 'a');
                for (int i = 0; i < BIG / chunk.length && !closed; i++) {
                    out.write(chunk);
                }
                out.write("\"}".getBytes(StandardCharsets.ISO_8859_1));
                break;
            case "drip":
                byte[] d = ("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Pad: " + "a".repeat(10000))
                        .getBytes(StandardCharsets.ISO_8859_1);
                for (int i = 0; i < d.length && !closed; i++) {
                    Thread.sleep(50);
                    out.write(d[i]);
                    out.flush();
                }
                break;
            case "status":
            case "codes":
                int c = code;
                if (m.equals("codes")) {
                    synchronized (this) {
                        c = codes.size() > 1 ? codes.remove(0) : codes.get(0);
                        coded.add(params);
                    }
                }
                send(out, c, "{\"error\":\"boom\",\"message\":\"boom\"}".getBytes(StandardCharsets.UTF_8));
                break;
            case "reset":
                s.setSoLinger(true, 0);
                s.close();
                break;
            case "hang":
                synchronized (this) {
                    long end = System.nanoTime() + 60_000_000_000L;
                    while (!closed && System.nanoTime() < end) {
                        wait(100);
                    }
                }
                break;
            case "churn": {
                byte[] body;
                String tag;
                synchronized (this) {
                    version++;
                    body = configBody();
                    tag = etag();
                }
                send(out, 200, body, "ETag: \"" + tag + "\"");
                break;
            }
            case "fast304": {
                if (etag().equals(params.get("etag"))) {
                    send(out, 304, new byte[0]);
                } else {
                    send(out, 200, configBody(), "ETag: \"" + etag() + "\"");
                }
                break;
            }
            default:
                throw new IllegalStateException(m);
        }
    }

    private void upload(OutputStream out, Map<String, String> params, byte[] body) throws Exception {
        if (uploadHang) {
            synchronized (this) {
                while (!closed) {
                    wait(100);
                }
            }
            return;
        }
        int c = uploadAnswer.apply(params);
        PprofDecode.Profile p;
        try (GZIPInputStream gz = new GZIPInputStream(new java.io.ByteArrayInputStream(body))) {
            p = PprofDecode.decode(gz.readAllBytes());
        } catch (Exception e) {
            p = null;
            c = 400;
        }
        synchronized (this) {
            uploads.add(new Upload(System.nanoTime(), params, p, c));
            notifyAll();
        }
        send(out, c, ("{\"id\":\"1\",\"service\":\"" + params.get("service") + "\",\"type\":\"wall\"}")
                .getBytes(StandardCharsets.UTF_8));
    }
}

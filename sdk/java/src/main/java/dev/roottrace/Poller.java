// Poller: the config poll as one plain HTTP/1.1 GET on its own connection, with a
// deadline on the whole exchange and a cap on the body. java.net.http.HttpClient retries a
// GET whose connection is reset before an answer, which would let a hostile server double
// the poll rate; here one poll is exactly one request (DESIGN §5).
package dev.roottrace;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import javax.net.ssl.SSLSocketFactory;

final class Poller {
    /** Status line and headers larger than this are refused. */
    static final int HEAD_MAX_BYTES = 64 * 1024;

    private final boolean https; // TLS
    private final String host; // host name or address
    private final int port; // TCP port
    private final String prefix; // path prefix before /api/v1
    final String hostHeader; // Host header value (package-private: tests)
    private final String authorization; // "Bearer <key>"
    private final String userAgent; // roottrace-java/<version>
    private final double connectTimeoutS; // TCP (and TLS) connect
    private volatile Socket current; // the socket of the request in flight, for abort()
    private volatile boolean aborted; // abort() came: no new requests

    Poller(String server, String key, String userAgent, double connectTimeoutS) {
        URI u = URI.create(Http.baseUrl(server));
        this.https = u.getScheme().equals("https");
        this.host = u.getHost();
        this.port = u.getPort() > 0 ? u.getPort() : https ? 443 : 80;
        this.prefix = u.getRawPath() == null ? "" : u.getRawPath();
        // the authority after its last '@' (any user info dropped); no regex in the
        // application's process (NameRules says why)
        String authority = u.getRawAuthority();
        this.hostHeader = authority.substring(authority.lastIndexOf('@') + 1);
        this.authorization = "Bearer " + key;
        this.userAgent = userAgent;
        this.connectTimeoutS = connectTimeoutS;
    }

    /** Ends the request in flight, if any, and refuses new ones (callers get Aborted). */
    void abort() {
        aborted = true;
        Socket s = current;
        if (s != null) {
            try {
                s.close();
            } catch (IOException e) {
                // closing anyway
            }
        }
    }

    /**
     * GET {@code path?query}; the whole exchange within deadlineS seconds. Throws HttpFailure
     * on any network failure or a malformed answer, BodyTooLarge past maxBody bytes, Aborted
     * after abort().
     */
    Http.Response get(String pathAndQuery, double deadlineS, int maxBody) throws Http.HttpFailure {
        long deadline = System.nanoTime() + (long) (deadlineS * 1e9);
        Socket s = null;
        try {
            s = new Socket();
            current = s;
            if (aborted) {
                throw new Http.Aborted();
            }
            long left = remainingMs(deadline);
            s.connect(new InetSocketAddress(host, port),
                    (int) Math.min(left, (long) (connectTimeoutS * 1000)));
            if (https) {
                s.setSoTimeout((int) remainingMs(deadline));
                s = ((SSLSocketFactory) SSLSocketFactory.getDefault()).createSocket(s, host, port, true);
                current = s;
            }
            OutputStream out = s.getOutputStream();
            String req = "GET " + prefix + pathAndQuery + " HTTP/1.1\r\nHost: " + hostHeader
                    + "\r\nAuthorization: " + authorization + "\r\nUser-Agent: " + userAgent
                    + "\r\nAccept: application/json\r\nConnection: close\r\n\r\n";
            s.setSoTimeout((int) remainingMs(deadline));
            out.write(req.getBytes(StandardCharsets.UTF_8));
            out.flush();
            return read(new DeadlineInput(s, deadline), maxBody);
        } catch (Http.HttpFailure e) {
            throw aborted && !(e instanceof Http.BodyTooLarge) ? new Http.Aborted() : e;
        } catch (IOException | RuntimeException e) {
            if (aborted) {
                throw new Http.Aborted();
            }
            String m = e.getMessage();
            throw new Http.HttpFailure(e.getClass().getSimpleName() + (m == null ? "" : ": " + m));
        } finally {
            current = null;
            if (s != null) {
                try {
                    s.close();
                } catch (IOException e) {
                    // closing anyway
                }
            }
        }
    }

    private static long remainingMs(long deadline) throws Http.HttpFailure {
        long ms = (deadline - System.nanoTime()) / 1_000_000;
        if (ms <= 0) {
            throw new Http.HttpFailure("request deadline passed");
        }
        return ms;
    }

    /** Reads from a socket, each read limited to the time left before the deadline. */
    private static final class DeadlineInput extends InputStream {
        private final Socket s;
        private final InputStream in;
        private final long deadline; // System.nanoTime()

        DeadlineInput(Socket s, long deadline) throws IOException {
            this.s = s;
            this.in = s.getInputStream();
            this.deadline = deadline;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            int n = read(one, 0, 1);
            return n < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            s.setSoTimeout((int) remainingMs(deadline));
            return in.read(b, off, len);
        }
    }

    /** The status line, headers and body of one answer. */
    private static Http.Response read(InputStream raw, int maxBody) throws IOException {
        java.io.BufferedInputStream in = new java.io.BufferedInputStream(raw, 8192);
        String statusLine = line(in, HEAD_MAX_BYTES);
        String[] parts = statusLine.split(" ", 3);
        if (parts.length < 2 || !parts[0].startsWith("HTTP/1.")) {
            throw new Http.HttpFailure("malformed status line");
        }
        int status;
        try {
            status = Integer.parseInt(parts[1]);
        } catch (NumberFormatException e) {
            throw new Http.HttpFailure("malformed status line");
        }
        long length = -1;
        boolean chunked = false;
        String etag = null;
        int headBytes = statusLine.length();
        while (true) {
            String h = line(in, HEAD_MAX_BYTES - headBytes);
            headBytes += h.length() + 2;
            if (h.isEmpty()) {
                break;
            }
            int c = h.indexOf(':');
            if (c <= 0) {
                continue;
            }
            String name = h.substring(0, c).trim().toLowerCase(Locale.ROOT);
            String value = h.substring(c + 1).trim();
            if (name.equals("content-length")) {
                try {
                    length = Long.parseLong(value);
                } catch (NumberFormatException e) {
                    throw new Http.HttpFailure("malformed Content-Length");
                }
            } else if (name.equals("transfer-encoding")) {
                chunked = value.toLowerCase(Locale.ROOT).contains("chunked");
            } else if (name.equals("etag")) {
                etag = value;
            }
        }
        if (status == 304 || status == 204 || (status >= 100 && status < 200)) {
            return new Http.Response(status, etag, new byte[0]);
        }
        if (!chunked && length > maxBody) {
            throw new Http.BodyTooLarge("body of " + length + " bytes");
        }
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        if (chunked) {
            while (true) {
                String size = line(in, 1024);
                int semi = size.indexOf(';');
                long n;
                try {
                    n = Long.parseLong((semi < 0 ? size : size.substring(0, semi)).trim(), 16);
                } catch (NumberFormatException e) {
                    throw new Http.HttpFailure("malformed chunk size");
                }
                if (n == 0) {
                    break;
                }
                copy(in, body, n, maxBody);
                line(in, 2);
            }
        } else {
            copy(in, body, length, maxBody);
        }
        return new Http.Response(status, etag, body.toByteArray());
    }

    /** Copies n bytes (to EOF when n < 0), failing past max bytes in all. */
    private static void copy(InputStream in, ByteArrayOutputStream out, long n, int max)
            throws IOException {
        byte[] buf = new byte[8192];
        long left = n;
        while (n < 0 || left > 0) {
            int want = (int) (n < 0 ? buf.length : Math.min(buf.length, left));
            int r = in.read(buf, 0, want);
            if (r < 0) {
                if (n < 0) {
                    return;
                }
                throw new Http.HttpFailure("connection closed in the body");
            }
            if (out.size() + r > max) {
                throw new Http.BodyTooLarge("body larger than " + max + " bytes");
            }
            out.write(buf, 0, r);
            left -= r;
        }
    }

    /** One CRLF- (or LF-) terminated line without its terminator, at most max bytes. */
    private static String line(InputStream in, int max) throws IOException {
        StringBuilder b = new StringBuilder();
        while (true) {
            int c = in.read();
            if (c < 0) {
                throw new Http.HttpFailure("connection closed in the headers");
            }
            if (c == '\n') {
                int n = b.length();
                return n > 0 && b.charAt(n - 1) == '\r' ? b.substring(0, n - 1) : b.toString();
            }
            if (b.length() >= max) {
                throw new Http.HttpFailure("headers too large");
            }
            b.append((char) c);
        }
    }
}

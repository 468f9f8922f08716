// Http: requests to the RootTrace server over java.net.http.HttpClient, with a deadline on
// the whole exchange (headers and body), a cap on the body read, and a way to abort the
// requests in flight (stop()). Its threads are the SDK's and are left out of profiles.
package dev.roottrace;

import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

final class Http {
    /** A network-level failure: refused, reset, timed out, malformed answer. */
    static class HttpFailure extends IOException {
        private static final long serialVersionUID = 1L;

        HttpFailure(String message) {
            super(message);
        }
    }

    /** The request was ended on purpose by {@link #abortAll} (the SDK stopping). */
    static final class Aborted extends HttpFailure {
        private static final long serialVersionUID = 1L;

        Aborted() {
            super("request aborted");
        }
    }

    /** The answer's body is larger than the caller's cap (it was not read in full). */
    static final class BodyTooLarge extends HttpFailure {
        private static final long serialVersionUID = 1L;

        BodyTooLarge(String message) {
            super(message);
        }
    }

    /** An HTTP answer: status, ETag header (or null) and body (at most the cap). */
    static final class Response {
        final int status; // HTTP status code
        final String etag; // the ETag header, null if none
        final byte[] body; // the body, at most the cap

        Response(int status, String etag, byte[] body) {
            this.status = status;
            this.etag = etag;
            this.body = body;
        }
    }

    private final String base; // scheme://host:port/prefix, no trailing '/'
    private final String authorization; // "Bearer <key>"
    private final String userAgent; // roottrace-java/<version>
    private final HttpClient client; // shared connection pool
    private final Set<CompletableFuture<?>> inFlight = ConcurrentHashMap.newKeySet();
    private volatile boolean aborted; // abortAll() was called: no new requests

    /**
     * @param server base URL, http:// or https://, optionally with a path prefix
     * @param sdkThreads where the threads this client starts are recorded (left out of
     *     profiles)
     * @throws IllegalArgumentException for a URL that is not http(s)://host...
     */
    Http(String server, String key, String userAgent, double connectTimeoutS,
            Set<Thread> sdkThreads) {
        this.base = baseUrl(server);
        this.authorization = "Bearer " + key;
        this.userAgent = userAgent;
        AtomicInteger n = new AtomicInteger();
        Executor exec = Executors.newCachedThreadPool(r -> {
            Thread[] self = new Thread[1];
            Thread t = new Thread(() -> {
                try {
                    r.run();
                } finally {
                    sdkThreads.remove(self[0]);
                }
            }, "roottrace-http-" + n.incrementAndGet());
            self[0] = t;
            t.setDaemon(true);
            sdkThreads.add(t);
            return t;
        });
        Set<Thread> before = selectorThreads();
        this.client = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofMillis((long) (connectTimeoutS * 1000)))
                .followRedirects(HttpClient.Redirect.NEVER)
                .executor(exec)
                .build();
        // The client's own selector thread ("HttpClient-<n>-SelectorManager") is ours too.
        for (Thread t : selectorThreads()) {
            if (!before.contains(t)) {
                sdkThreads.add(t);
            }
        }
    }

    /** The normalized base URL ({@code scheme://authority/prefix}, no trailing '/').
     *  @throws IllegalArgumentException for anything but an http(s)://host URL */
    static String baseUrl(String server) {
        URI u;
        try {
            u = new URI(server.trim());
        } catch (Exception e) {
            throw new IllegalArgumentException("server is not a URL");
        }
        String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase();
        if (!(scheme.equals("http") || scheme.equals("https")) || u.getHost() == null) {
            throw new IllegalArgumentException("server must be an http:// or https:// URL");
        }
        String path = u.getRawPath() == null ? "" : u.getRawPath();
        while (path.endsWith("/")) {
            path = path.substring(0, path.length() - 1);
        }
        return scheme + "://" + u.getRawAuthority() + path;
    }

    /** The live threads named like an HttpClient's selector thread (no safepoint needed). */
    private static Set<Thread> selectorThreads() {
        ThreadGroup root = Thread.currentThread().getThreadGroup();
        while (root.getParent() != null) {
            root = root.getParent();
        }
        Thread[] all = new Thread[root.activeCount() * 2 + 16];
        int n = root.enumerate(all, true);
        Set<Thread> s = ConcurrentHashMap.newKeySet();
        for (int i = 0; i < n; i++) {
            String name = all[i].getName();
            if (name.startsWith("HttpClient-") && name.endsWith("-SelectorManager")) {
                s.add(all[i]);
            }
        }
        return s;
    }


    /** The query string of {@code params} (null values left out), UTF-8 percent-encoded. */
    static String query(Map<String, Object> params) {
        StringBuilder b = new StringBuilder();
        for (Map.Entry<String, Object> e : params.entrySet()) {
            if (e.getValue() == null) {
                continue;
            }
            b.append(b.length() == 0 ? "" : "&").append(enc(e.getKey())).append('=')
                    .append(enc(String.valueOf(e.getValue())));
        }
        return b.toString();
    }

    private static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
    }

    /**
     * One request. Throws HttpFailure on any network failure or when the whole exchange takes
     * longer than {@code deadlineS} seconds; BodyTooLarge when the body exceeds maxBody bytes;
     * Aborted after abortAll().
     */
    Response request(String method, String path, Map<String, Object> params, byte[] body,
            double deadlineS, int maxBody) throws HttpFailure {
        if (aborted) {
            throw new Aborted();
        }
        String q = query(params);
        long deadlineMs = Math.max(1, (long) (deadlineS * 1000));
        HttpRequest.Builder rb = HttpRequest.newBuilder(URI.create(base + path + (q.isEmpty() ? "" : "?" + q)))
                .timeout(Duration.ofMillis(deadlineMs))
                .header("Authorization", authorization)
                .header("User-Agent", userAgent);
        if (body != null) {
            rb.header("Content-Type", "application/octet-stream")
                    .method(method, HttpRequest.BodyPublishers.ofByteArray(body));
        } else {
            rb.method(method, HttpRequest.BodyPublishers.noBody());
        }
        CompletableFuture<HttpResponse<byte[]>> f =
                client.sendAsync(rb.build(), info -> new CappedBody(info, maxBody));
        inFlight.add(f);
        try {
            if (aborted) {
                f.cancel(true);
            }
            HttpResponse<byte[]> r = f.get(deadlineMs, TimeUnit.MILLISECONDS);
            return new Response(r.statusCode(), r.headers().firstValue("etag").orElse(null),
                    r.body());
        } catch (CancellationException e) {
            throw new Aborted();
        } catch (TimeoutException e) {
            f.cancel(true);
            throw new HttpFailure("request deadline passed (" + deadlineMs + " ms)");
        } catch (InterruptedException e) {
            f.cancel(true);
            Thread.currentThread().interrupt();
            throw new Aborted();
        } catch (ExecutionException e) {
            Throwable c = e.getCause() == null ? e : e.getCause();
            while (c.getCause() != null && !(c instanceof BodyTooLarge)) {
                c = c.getCause();
            }
            if (c instanceof BodyTooLarge) {
                throw (BodyTooLarge) c;
            }
            if (aborted) {
                throw new Aborted();
            }
            String m = c.getMessage();
            throw new HttpFailure(c.getClass().getSimpleName() + (m == null ? "" : ": " + m));
        } finally {
            inFlight.remove(f);
        }
    }

    /** Ends every request in flight and refuses new ones (their callers get Aborted). */
    void abortAll() {
        aborted = true;
        for (CompletableFuture<?> f : inFlight) {
            f.cancel(true);
        }
    }

    /** Collects a body up to a cap; past it, cancels the exchange and fails. */
    private static final class CappedBody implements HttpResponse.BodySubscriber<byte[]> {
        private final CompletableFuture<byte[]> result = new CompletableFuture<>();
        private final int max; // bytes
        private byte[] buf = new byte[256];
        private int len;
        private Flow.Subscription sub;
        private final String tooLarge; // set when Content-Length already says too large

        CappedBody(HttpResponse.ResponseInfo info, int max) {
            this.max = max;
            long declared = info.headers().firstValueAsLong("content-length").orElse(-1);
            this.tooLarge = declared > max ? "body of " + declared + " bytes" : null;
        }

        @Override
        public CompletionStage<byte[]> getBody() {
            return result;
        }

        @Override
        public void onSubscribe(Flow.Subscription s) {
            sub = s;
            if (tooLarge != null) {
                s.cancel();
                result.completeExceptionally(new BodyTooLarge(tooLarge));
                return;
            }
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(List<ByteBuffer> items) {
            for (ByteBuffer b : items) {
                int n = b.remaining();
                if (result.isDone()) {
                    return;
                }
                if ((long) len + n > max) {
                    sub.cancel();
                    result.completeExceptionally(
                            new BodyTooLarge("body larger than " + max + " bytes"));
                    return;
                }
                if (len + n > buf.length) {
                    buf = java.util.Arrays.copyOf(buf, Math.max(len + n, 2 * buf.length));
                }
                b.get(buf, len, n);
                len += n;
            }
        }

        @Override
        public void onError(Throwable t) {
            result.completeExceptionally(t);
        }

        @Override
        public void onComplete() {
            result.complete(java.util.Arrays.copyOf(buf, len));
        }
    }
}

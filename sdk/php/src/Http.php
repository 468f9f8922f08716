<?php
// A small HTTP/1.0 client over PHP socket streams with a deadline on the whole exchange
// (connect, request, headers and body) and a cap on the body read. A stream timeout alone
// bounds each read, not a slow drip, so every read gets only the time left.
declare(strict_types=1);

namespace RootTrace;

final class Http
{
    private string $scheme; // "tcp" or "tls"
    private string $host;   // host name or address
    private int $port;      // TCP port
    private string $prefix; // path prefix before /api/v1

    /**
     * @param string $baseUrl http:// or https:// URL of the server
     * @param array<string, string> $headers sent on every request
     * @throws \InvalidArgumentException for a URL that is not http(s)
     */
    public function __construct(string $baseUrl, private readonly array $headers)
    {
        $u = parse_url($baseUrl);
        $scheme = is_array($u) ? strtolower($u['scheme'] ?? '') : '';
        if (!in_array($scheme, ['http', 'https'], true) || empty($u['host'])) {
            throw new \InvalidArgumentException('server must be an http:// or https:// URL');
        }
        $this->scheme = $scheme === 'https' ? 'tls' : 'tcp';
        $this->host = $u['host'];
        $this->port = (int)($u['port'] ?? ($scheme === 'https' ? 443 : 80));
        $this->prefix = rtrim($u['path'] ?? '', '/');
    }

    /**
     * One request on a new connection.
     * @param array<string, scalar|null> $params query parameters (null ones left out)
     * @param float $deadlineS seconds for the whole exchange
     * @param float $connectS seconds for the TCP (and TLS) connect, within the deadline
     * @param int $maxBody bytes of body read at most
     * @return array{status: int, headers: array<string, string>, body: string}
     * @throws HttpError on any network failure, a malformed answer or the deadline passing;
     *         BodyTooLarge when the body exceeds $maxBody
     */
    public function request(string $method, string $path, array $params, ?string $body,
                            array $headers, float $deadlineS, float $connectS,
                            int $maxBody): array
    {
        $deadline = microtime(true) + $deadlineS;
        $q = http_build_query(array_filter($params, static fn($v) => $v !== null), '', '&',
            PHP_QUERY_RFC3986);
        $target = $this->prefix . $path . ($q === '' ? '' : '?' . $q);
        $host = str_contains($this->host, ':') && $this->host[0] !== '[' ? '[' . $this->host . ']' : $this->host;
        $lines = [$method . ' ' . $target . ' HTTP/1.0', 'Host: ' . $host . ':' . $this->port,
            'Connection: close'];
        foreach ($this->headers + $headers as $k => $v) {
            $lines[] = $k . ': ' . $v;
        }
        if ($body !== null) {
            $lines[] = 'Content-Length: ' . strlen($body);
        }
        $raw = implode("\r\n", $lines) . "\r\n\r\n" . ($body ?? '');
        $errno = 0;
        $errstr = '';
        $ctx = stream_context_create(['ssl' => ['SNI_enabled' => true, 'peer_name' => $this->host]]);
        $sock = @stream_socket_client($this->scheme . '://' . $host . ':' . $this->port, $errno,
            $errstr, max(0.001, min($connectS, $deadlineS)), STREAM_CLIENT_CONNECT, $ctx);
        if ($sock === false) {
            throw new HttpError('connect: ' . ($errstr !== '' ? $errstr : 'error ' . $errno));
        }
        try {
            $this->send($sock, $raw, $deadline);
            return $this->receive($sock, $deadline, $maxBody);
        } finally {
            @fclose($sock);
        }
    }

    /** @param resource $sock */
    private function send($sock, string $raw, float $deadline): void
    {
        while ($raw !== '') {
            $this->timeLeft($sock, $deadline);
            $n = @fwrite($sock, $raw);
            if ($n === false || ($n === 0 && (stream_get_meta_data($sock)['timed_out'] ?? false))) {
                throw new HttpError('write failed');
            }
            $raw = (string)substr($raw, $n);
        }
    }

    /** @param resource $sock */
    private function timeLeft($sock, float $deadline): void
    {
        $left = $deadline - microtime(true);
        if ($left <= 0) {
            throw new HttpError('request deadline passed');
        }
        stream_set_timeout($sock, (int)$left, (int)(($left - (int)$left) * 1e6));
    }

    /**
     * Reads at most $max bytes more (null at EOF).
     * @param resource $sock
     */
    private function read($sock, float $deadline, int $max): ?string
    {
        $this->timeLeft($sock, $deadline);
        $chunk = @fread($sock, max(1, min(65536, $max)));
        if ($chunk === false || $chunk === '') {
            if (stream_get_meta_data($sock)['timed_out'] ?? false) {
                throw new HttpError('request deadline passed');
            }
            if (@feof($sock)) {
                return null;
            }
            throw new HttpError('read failed');
        }
        return $chunk;
    }

    /**
     * @param resource $sock
     * @return array{status: int, headers: array<string, string>, body: string}
     */
    private function receive($sock, float $deadline, int $maxBody): array
    {
        $buf = '';
        while (($end = strpos($buf, "\r\n\r\n")) === false) {
            if (strlen($buf) > 65536) {
                throw new HttpError('response headers too large');
            }
            $chunk = $this->read($sock, $deadline, 65536);
            if ($chunk === null) {
                throw new HttpError('connection closed before the headers ended');
            }
            $buf .= $chunk;
        }
        $head = explode("\r\n", substr($buf, 0, $end));
        $body = (string)substr($buf, $end + 4);
        if (!preg_match('#^HTTP/\d\.\d (\d{3})#', $head[0], $m)) {
            throw new HttpError('malformed status line');
        }
        $headers = [];
        foreach (array_slice($head, 1) as $h) {
            $p = strpos($h, ':');
            if ($p !== false) {
                $headers[strtolower(trim(substr($h, 0, $p)))] = trim(substr($h, $p + 1));
            }
        }
        $status = (int)$m[1];
        $length = null;
        if (isset($headers['content-length']) && preg_match('/^\d{1,18}$/D', $headers['content-length'])) {
            $length = (int)$headers['content-length'];
            if ($length > $maxBody) {
                throw new BodyTooLarge('body of ' . $length . ' bytes');
            }
        }
        if ($status === 304 || $status === 204) {
            $length = 0;
        }
        $want = $length ?? $maxBody + 1;
        while (strlen($body) < $want) {
            $chunk = $this->read($sock, $deadline, $want - strlen($body));
            if ($chunk === null) {
                break;
            }
            $body .= $chunk;
        }
        if (strlen($body) > $maxBody) {
            throw new BodyTooLarge('body larger than ' . $maxBody . ' bytes');
        }
        if ($length !== null && strlen($body) < $length) {
            throw new HttpError('connection closed inside the body');
        }
        return ['status' => $status, 'headers' => $headers, 'body' => substr($body, 0, $want)];
    }
}

package dev.roottrace;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The poll's Host header: the server URL's authority without its user info (the part up to
 *  the last '@'), as the regex `^.*@` it replaced removed it. */
class PollerTest {
    @Test
    void hostHeaderDropsUserInfo() {
        assertEquals("rt.example:8080", new Poller("http://rt.example:8080", "k", "ua", 1).hostHeader);
        assertEquals("rt.example:8080",
                new Poller("http://user:p%40ss@rt.example:8080/base", "k", "ua", 1).hostHeader);
    }
}

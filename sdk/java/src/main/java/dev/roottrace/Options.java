// Options: what RootTrace.start() and the java agent's argument string configure.
package dev.roottrace;

import java.util.Locale;

/**
 * Options for {@link RootTrace#start(Options)}: the server's base URL, an ingest key, the
 * service name, and optionally the service's release and this process's instance name.
 * A fluent builder; every setter returns {@code this}.
 *
 * <pre>
 * RootTrace.start(new Options().server("http://roottrace:4040").key(System.getenv("RT_KEY"))
 *         .service("checkout").version("1.4.2"));
 * </pre>
 */
public final class Options {
    String server; // base URL; ROOTTRACE_SERVER when null
    String key; // ingest key; ROOTTRACE_KEY when null
    String service; // service name (required)
    String version; // the service's release, optional
    String instance; // instance name, default <hostname>-<pid>-<4 random hex>
    String problem; // why the agent argument string was refused, else null

    /** Empty options: server and key then come from ROOTTRACE_SERVER and ROOTTRACE_KEY. */
    public Options() {
    }

    /** The server's base URL, e.g. {@code http://roottrace:4040} (http or https). */
    public Options server(String url) {
        this.server = url;
        return this;
    }

    /** An ingest key (sent as {@code Authorization: Bearer <key>}). */
    public Options key(String key) {
        this.key = key;
        return this;
    }

    /** The service name: 1-200 bytes of UTF-8, no control characters, no '/'. */
    public Options service(String name) {
        this.service = name;
        return this;
    }

    /** The service's release (shown as deploys on the timeline); optional. */
    public Options version(String version) {
        this.version = version;
        return this;
    }

    /** This process's name; default {@code <hostname>-<pid>-<4 random hex>}. */
    public Options instance(String name) {
        this.instance = name;
        return this;
    }

    /**
     * Options from a java agent argument string,
     * {@code service=checkout,server=http://host:4040,key=rt_...,version=1.2,instance=a}.
     * Lenient: names are case-insensitive, blanks around names and values and empty items are
     * ignored, values may be quoted. Never throws: an item it cannot read (an unknown name, a
     * missing '=', a name given twice) makes options that never start, whose status says why.
     */
    public static Options parseAgentArgs(String args) {
        Options o = new Options();
        if (args == null) {
            return o;
        }
        for (String item : args.split(",")) {
            String it = item.trim();
            if (it.isEmpty()) {
                continue;
            }
            int eq = it.indexOf('=');
            if (eq <= 0) {
                o.refuse("agent argument without name=value: " + it);
                continue;
            }
            String name = it.substring(0, eq).trim().toLowerCase(Locale.ROOT);
            String value = unquote(it.substring(eq + 1).trim());
            if (!o.set(name, value)) {
                o.refuse("unknown or repeated agent argument: " + name);
            }
        }
        return o;
    }

    private void refuse(String why) {
        if (problem == null) {
            problem = why;
        }
    }

    private boolean set(String name, String value) {
        switch (name) {
            case "server":
                return server == null && (server = value) != null;
            case "key":
                return key == null && (key = value) != null;
            case "service":
                return service == null && (service = value) != null;
            case "version":
                return version == null && (version = value) != null;
            case "instance":
                return instance == null && (instance = value) != null;
            default:
                return false;
        }
    }

    private static String unquote(String v) {
        if (v.length() >= 2 && (v.charAt(0) == '"' || v.charAt(0) == '\'')
                && v.charAt(v.length() - 1) == v.charAt(0)) {
            return v.substring(1, v.length() - 1);
        }
        return v;
    }
}

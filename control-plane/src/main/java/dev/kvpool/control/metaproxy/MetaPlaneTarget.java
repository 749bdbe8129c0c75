package dev.kvpool.control.metaproxy;

/**
 * Where {@code /api/v1/meta/**} is forwarded: the base URL of a metadata plane's HTTP port ({@code http://host:6382}).
 * The default bean is {@code kvpool.control.metadata-plane.url}; a bean of this type that knows the replicas (for
 * example from their heartbeats on {@code /api/v1/stats}) may replace it to prefer the reporting leader's URL.
 */
public interface MetaPlaneTarget {
    /** The base URL to forward to now: scheme, host and port, no path. */
    String url();
}

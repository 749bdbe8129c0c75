package dev.kvpool.meta.support;

/** The two ways a client reaches the meta service; data-plane tests run over both. */
public enum Transport {
    HTTP, GRPC
}

package dev.kvpool.agent.io.uring;

/** io_uring cannot be used on this kernel or under this seccomp profile; the agent falls back to FileChannel. */
public final class IoUringUnavailableException extends RuntimeException {
    public IoUringUnavailableException(String message) {
        super(message);
    }
}

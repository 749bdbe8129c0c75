package dev.kvpool.operator.controlplane;

/** A spec the operator refuses before calling the control plane (the message names the field). */
public final class InvalidSpec extends Exception {
    public InvalidSpec(String message) {
        super(message);
    }
}

package io.vmcuda.scheduler;

/** A device query failed; the message is one line that ends up in the daemon's "no GPU" reason. */
public class GpuQueryException extends Exception {
    public GpuQueryException(String message) {
        super(message);
    }
}

package io.vmcuda.scheduler;

/** A GPU request cannot be granted; the message is the one line the client is shown. */
public class NoGpuAvailableException extends Exception {
    public NoGpuAvailableException(String message) {
        super(message);
    }
}

package io.vmcuda.appliance.cache;

/** The binary cannot become a worker; the message is the one line sent in HELLO_REPLY REFUSED. */
public class BinaryRefusedException extends Exception {
    public BinaryRefusedException(String message) {
        super(message);
    }
}

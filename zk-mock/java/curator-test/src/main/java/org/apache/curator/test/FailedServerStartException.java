package org.apache.curator.test;

/** A server did not start (its port was taken, or the zk-mock binary failed); the message says why. */
public class FailedServerStartException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    public FailedServerStartException(Throwable cause) {
        super(cause);
    }

    public FailedServerStartException(String message) {
        super(message);
    }
}

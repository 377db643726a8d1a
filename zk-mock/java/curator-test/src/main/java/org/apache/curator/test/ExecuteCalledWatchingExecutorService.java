package org.apache.curator.test;

import java.util.concurrent.ExecutorService;

/** An executor that remembers whether {@link #execute} was called. */
public class ExecuteCalledWatchingExecutorService extends DelegatingExecutorService {
    boolean executeCalled = false;

    public ExecuteCalledWatchingExecutorService(ExecutorService delegate) {
        super(delegate);
    }

    @Override
    public synchronized void execute(Runnable command) {
        executeCalled = true;
        super.execute(command);
    }

    public synchronized boolean isExecuteCalled() {
        return executeCalled;
    }

    public synchronized void setExecuteCalled(boolean executeCalled) {
        this.executeCalled = executeCalled;
    }
}

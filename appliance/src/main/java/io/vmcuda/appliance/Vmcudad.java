package io.vmcuda.appliance;

import io.vmcuda.scheduler.SystemGpuInventory;
import java.util.concurrent.CountDownLatch;
import java.util.logging.Logger;

/**
 * vmcudad, the appliance daemon, in the foreground; logs go to stderr.
 * SIGTERM/SIGINT run {@link Daemon#close()}: running sessions end when the daemon stops (their workers
 * are terminated so none is left holding GPU memory).
 */
public final class Vmcudad {
    private Vmcudad() {}

    public static void main(String[] args) throws Exception {
        for (String a : args) {
            if (a.equals("--version")) {
                System.out.println("vmcudad " + Version.get());
                return;
            }
            if (a.equals("--help") || a.equals("-h")) {
                System.out.println(DaemonOptions.USAGE);
                return;
            }
        }
        // must happen before anything touches java.util.logging
        System.setProperty("java.util.logging.manager", ShutdownSafeLogManager.class.getName());
        OneLineLogFormatter.install();
        Logger log = Logger.getLogger(Vmcudad.class.getName());
        DaemonOptions options;
        ApplianceConfig config;
        try {
            options = DaemonOptions.parse(args);
            config = ApplianceConfig.load(options.configFile());
        } catch (IllegalArgumentException | java.io.IOException e) {
            System.err.println("vmcudad: " + e.getMessage());
            System.err.println(DaemonOptions.USAGE);
            System.exit(2);
            return;
        }
        Daemon daemon;
        try {
            daemon = Daemon.start(options, config, SystemGpuInventory.detect());
        } catch (Exception e) {
            log.severe("cannot start: " + e);
            System.exit(1);
            return;
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            daemon.close();
            stopped.countDown();
        }, "vmcudad-shutdown"));
        stopped.await();
    }
}

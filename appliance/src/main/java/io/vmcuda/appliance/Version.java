package io.vmcuda.appliance;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/** The build's version, from the Maven-filtered {@code vmcudad-version.properties}. */
public final class Version {
    private Version() {}

    public static String get() {
        try (InputStream in = Version.class.getResourceAsStream("vmcudad-version.properties")) {
            if (in == null) return "unknown";
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version", "unknown");
        } catch (IOException e) {
            return "unknown";
        }
    }
}

package io.vmcuda.appliance.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vmcuda.appliance.ApplianceConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** When the appliance offers UCX (worker.ucx): never to tenants unless the operator says so, never without the agent. */
class UcxAgentTest {
    @TempDir
    Path lib;

    private static final String TENANT = "tenant.alice.token_sha256";
    private static final String SHA = "ab".repeat(32);

    /** A stand-in agent whose --probe passes (UCX starts). */
    private Path agent() throws Exception {
        return agent("#!/bin/sh\necho 'vmcuda-ucx-agent: probe ok: UCX test'\n");
    }

    private Path agent(String script) throws Exception {
        Path a = lib.resolve(UcxAgent.AGENT);
        Files.writeString(a, script);
        Files.setPosixFilePermissions(a, PosixFilePermissions.fromString("rwxr-xr-x"));
        return a;
    }

    private static ApplianceConfig config(Map<String, String> keys) {
        return ApplianceConfig.defaultsOnly().with(keys);
    }

    @Test
    void autoOffersUcxOnAnApplianceWithoutTenantsWhenTheAgentIsThere() throws Exception {
        assertNull(UcxAgent.resolve(config(Map.of()), lib), "no agent: not offered");
        Path a = agent();
        assertEquals(a.toAbsolutePath(), UcxAgent.resolve(config(Map.of()), lib));
        assertNull(UcxAgent.resolve(config(Map.of("worker.ucx", "false")), lib));
    }

    @Test
    void withTenantsOnlyTrueOffersIt() throws Exception {
        Path a = agent();
        assertNull(UcxAgent.resolve(config(Map.of(TENANT, SHA)), lib), "auto with tenants: UCX trusts its peers");
        assertEquals(a.toAbsolutePath(), UcxAgent.resolve(config(Map.of(TENANT, SHA, "worker.ucx", "true")), lib));
    }

    /** An agent that cannot start (UCX's libraries not installed) is not offered to every session to fail in. */
    @Test
    void anAgentWhoseProbeFailsIsNotOffered() throws Exception {
        agent("#!/bin/sh\necho 'vmcuda-ucx-agent: error while loading shared libraries: libucp.so.0' >&2\nexit 127\n");
        assertNull(UcxAgent.resolve(config(Map.of()), lib));
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> UcxAgent.resolve(config(Map.of("worker.ucx", "true")), lib));
        assertTrue(e.getMessage().contains("libucp.so.0"), e.getMessage());
    }

    @Test
    void trueWithoutTheAgentStopsTheDaemonAndTyposAreRefused() {
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> UcxAgent.resolve(config(Map.of("worker.ucx", "true")), lib));
        assertTrue(e.getMessage().contains("vmcuda-ucx-agent is missing") || e.getMessage().contains("is missing"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> config(Map.of("worker.ucx", "yes")).workerUcx());
    }
}

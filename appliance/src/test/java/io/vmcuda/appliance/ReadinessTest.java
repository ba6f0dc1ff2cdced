package io.vmcuda.appliance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** /healthz and /readyz as a load balancer or the pool would ask them, without the operator token. */
class ReadinessTest {
    private static NativeFixtures fixtures;

    @TempDir
    Path state;

    @BeforeAll
    static void build() throws Exception {
        fixtures = NativeFixtures.get();
    }

    @Test
    void anApplianceWithAGpuIsReady() throws Exception {
        try (DaemonHarness d = new DaemonHarness(state, fixtures.workerLibDir(), TestInventory.gpus(1), Map.of())) {
            var ready = d.get("/readyz", null);
            assertEquals(200, ready.statusCode(), ready.body());
            assertEquals("ready\n", ready.body());
            assertEquals("ok\n", d.get("/healthz", null).body());
        }
    }

    @Test
    void anApplianceWithoutAGpuIsAliveButNotReadyAndSaysWhy() throws Exception {
        try (DaemonHarness d = new DaemonHarness(state, fixtures.workerLibDir(), TestInventory.none(), Map.of())) {
            var ready = d.get("/readyz", null);
            assertEquals(503, ready.statusCode(), ready.body());
            assertTrue(ready.body().startsWith("not ready: no usable GPU"), ready.body());
            assertEquals(200, d.get("/healthz", null).statusCode());
        }
    }

    @Test
    void aStateDirectoryThatTakesNoWriteIsNotReady() throws Exception {
        // a file where the directory should be: no write succeeds there, whoever runs the test (root too)
        Path notADirectory = Files.createFile(state.resolve("not-a-directory"));
        var problems = new io.vmcuda.appliance.admin.Readiness(TestInventory.gpus(1), notADirectory).problems();
        assertEquals(1, problems.size(), problems.toString());
        assertTrue(problems.get(0).startsWith("state directory " + notADirectory + " takes no write"), problems.toString());
    }
}

package io.vmcuda.appliance.pool;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.vmcuda.appliance.ApplianceConfig;
import io.vmcuda.scheduler.pool.PoolPolicy;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PoolSettingsTest {
    private static final InetSocketAddress LISTEN = new InetSocketAddress("10.1.2.3", 7070);

    @Test
    void notInAPoolUnlessEtcdIsNamed() {
        assertTrue(ApplianceConfig.defaultsOnly().poolSettings(LISTEN, null).isEmpty());
    }

    @Test
    void defaultsComeFromTheClientPortAndThisHost() {
        PoolSettings s = ApplianceConfig.defaultsOnly().poolSettings(LISTEN, "http://e1:2379/, http://e2:2379").orElseThrow();
        assertEquals(List.of("http://e1:2379", "http://e2:2379"), s.etcd());
        assertEquals("/vmcuda/", s.prefix());
        assertEquals("10.1.2.3:7070", s.advertise());
        assertTrue(s.name().endsWith("-7070"), s.name());
        assertEquals(Set.of(PoolSettings.thisHostIdentity()), s.shmHosts());
        assertEquals(Duration.ofSeconds(8), s.ttl());
        assertEquals(PoolPolicy.LEAST_LOADED, s.policy());
    }

    @Test
    void theCommandLineOverridesTheProperties() {
        ApplianceConfig c = ApplianceConfig.defaultsOnly().with(Map.of("cluster.etcd", "http://from-file:2379",
                "cluster.name", "gpu-7", "cluster.advertise", "appliance-7.lab:7070", "cluster.shm_hosts", "h1, h2",
                "cluster.policy", "pack"));
        PoolSettings s = c.poolSettings(LISTEN, "http://from-flag:2379").orElseThrow();
        assertEquals(List.of("http://from-flag:2379"), s.etcd());
        assertEquals("gpu-7", s.name());
        assertEquals("appliance-7.lab:7070", s.advertise());
        assertEquals(Set.of("h1", "h2"), s.shmHosts());
        assertEquals(PoolPolicy.PACK, s.policy());
        assertEquals(List.of("http://from-file:2379"), c.poolSettings(LISTEN, null).orElseThrow().etcd());
    }

    @Test
    void badSettingsStopTheStartWithTheReason() {
        ApplianceConfig d = ApplianceConfig.defaultsOnly();
        assertTrue(assertThrows(IllegalArgumentException.class, () -> d.poolSettings(LISTEN, "etcd:2379"))
                .getMessage().contains("is not an http:// URL"));
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> d.with(Map.of("cluster.prefix", "vmcuda")).poolSettings(LISTEN, "http://e:2379"))
                .getMessage().contains("must start and end with '/'"));
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> d.with(Map.of("cluster.refresh_s", "10")).poolSettings(LISTEN, "http://e:2379"))
                .getMessage().contains("shorter than cluster.ttl_s"));
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> d.with(Map.of("cluster.name", "a b")).poolSettings(LISTEN, "http://e:2379"))
                .getMessage().contains("cluster.name"));
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> d.with(Map.of("cluster.policy", "random")).poolSettings(LISTEN, "http://e:2379"))
                .getMessage().contains("cluster.policy"));
    }

    @Test
    void placementQuestionsParse() {
        PlacementQuestion q = PlacementQuestion.parse("program=train.py;host=abc;gpu_model=H100;gpu_memory=85899345920;later=x", 2);
        assertEquals("train.py", q.program());
        assertEquals(2, q.request().gpus());
        assertEquals("abc", q.request().clientHost());
        assertEquals("H100", q.request().gpuModel());
        assertEquals(85899345920L, q.request().minGpuMemory());
        assertEquals("", PlacementQuestion.parse("", 1).request().gpuModel());
        assertThrows(IllegalArgumentException.class, () -> PlacementQuestion.parse("gpu_memory=lots", 1));
        assertThrows(IllegalArgumentException.class, () -> PlacementQuestion.parse("gpu_memory=-1", 1));
    }

    @Test
    void registrationsReadBackAsWritten() {
        ApplianceRecord r = new ApplianceRecord("a", "h:7070", "v", List.of("m"), 4, 1, false, 5, null,
                List.of(new ApplianceRecord.Gpu(0, "GPU-1", "NVIDIA H100", 80L << 30, "9.0", 1, -1, -1)));
        ApplianceRecord back = PoolJson.readAppliance(PoolJson.write(r));
        assertEquals(r, back);
        // the pool's format, byte for byte what the appliances wrote with Jackson's data binding (SNAKE_CASE, records)
        assertEquals("{\"name\":\"a\",\"endpoint\":\"h:7070\",\"version\":\"v\",\"shm_hosts\":[\"m\"],\"slots_per_gpu\":4,"
                + "\"sessions\":1,\"draining\":false,\"updated_ms\":5,\"no_gpu_reason\":null,\"gpus\":[{\"index\":0,\"uuid\":\"GPU-1\","
                + "\"name\":\"NVIDIA H100\",\"memory_total\":85899345920,\"compute_capability\":\"9.0\",\"sessions\":1,"
                + "\"memory_used\":-1,\"utilization\":-1}]}", text(PoolJson.write(r)));
        ApplianceRecord gpuless = new ApplianceRecord(null, null, null, null, 0, 0, true, 0, "no gpu", null);
        assertEquals("{\"name\":null,\"endpoint\":null,\"version\":null,\"shm_hosts\":null,\"slots_per_gpu\":0,\"sessions\":0,"
                + "\"draining\":true,\"updated_ms\":0,\"no_gpu_reason\":\"no gpu\",\"gpus\":null}", text(PoolJson.write(gpuless)));
        assertEquals(gpuless, PoolJson.readAppliance(PoolJson.write(gpuless)));
        assertEquals(null, PoolJson.readAppliance(json("{not json")));
    }

    @Test
    void ticketsReadBackAsWritten() {
        TicketRecord t = new TicketRecord("a", List.of("GPU-1", "GPU-2"), "t", 77);
        assertEquals("{\"appliance\":\"a\",\"gpus\":[\"GPU-1\",\"GPU-2\"],\"tenant\":\"t\",\"created_ms\":77}",
                text(PoolJson.write(t)));
        assertEquals(t, PoolJson.readTicket(PoolJson.write(t)));
    }

    /** A later version's fields are skipped, missing ones are null (0, false), and a value of the wrong kind is refused. */
    @Test
    void poolValuesAreReadTolerantlyButNotBlindly() {
        assertEquals(new ApplianceRecord("x", null, null, null, 4, 0, false, 0, null, java.util.Arrays.asList((ApplianceRecord.Gpu) null)),
                PoolJson.readAppliance(json("{\"name\":\"x\",\"extra\":{\"a\":[1,{\"b\":2}]},\"gpus\":[null],"
                        + "\"slots_per_gpu\":\"4\",\"draining\":null,\"later\":[]}")));
        assertEquals(new ApplianceRecord.Gpu(3, "GPU-3", null, 0, null, 0, 0, 0),
                PoolJson.readAppliance(json("{\"gpus\":[{\"uuid\":\"GPU-3\",\"index\":3,\"mig\":{\"slices\":7}}]}")).gpus().get(0));
        assertEquals(new TicketRecord(null, null, null, 1), PoolJson.readTicket(json("{\"created_ms\":1.5}")));
        assertEquals(null, PoolJson.readTicket(json("{\"gpus\":\"x\"}")));
        assertEquals(null, PoolJson.readAppliance(json("[]")));
        assertEquals(null, PoolJson.readAppliance(json("")));
        assertEquals(null, PoolJson.readAppliance(json("{\"slots_per_gpu\":99999999999}")));
        assertEquals(null, PoolJson.readAppliance(json("{\"name\":\"x\",\"gpus\":[{\"index\":0}")));
    }

    private static io.etcd.jetcd.ByteSequence json(String s) {
        return io.etcd.jetcd.ByteSequence.from(s, java.nio.charset.StandardCharsets.UTF_8);
    }

    private static String text(io.etcd.jetcd.ByteSequence b) {
        return b.toString(java.nio.charset.StandardCharsets.UTF_8);
    }
}

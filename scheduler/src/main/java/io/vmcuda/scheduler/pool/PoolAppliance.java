package io.vmcuda.scheduler.pool;

import java.util.List;
import java.util.Set;

/**
 * One live appliance of the pool.
 *
 * @param endpoint    HOST:PORT its clients connect to
 * @param shmHosts    identities of the hosts whose clients can use its shared-memory path (co-located)
 * @param slotsPerGpu sessions one of its GPUs takes at most (its scheduler.max_sessions_per_gpu)
 * @param draining    it takes no new sessions (it is being stopped)
 */
public record PoolAppliance(String name, String endpoint, Set<String> shmHosts, int slotsPerGpu, boolean draining,
                            List<PoolGpu> gpus) {
    int sessions() {
        return gpus.stream().mapToInt(PoolGpu::sessions).sum();
    }
}

package io.vmcuda.appliance.session;

import java.util.List;

/**
 * What a pool's placement asked for a session it sent here: the GPUs (UUIDs) to take first when they have
 * a free slot, and what to do once the GPU request is decided (granted or refused), which is when the
 * placement's ticket has served its purpose.
 */
public record PlacementHint(List<String> preferredGpus, Runnable decided) {
    public static final PlacementHint NONE = new PlacementHint(List.of(), () -> { });
}

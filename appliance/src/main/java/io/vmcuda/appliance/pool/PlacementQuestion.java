package io.vmcuda.appliance.pool;

import io.vmcuda.scheduler.pool.PoolRequest;

/**
 * A client's placement question: the name field of a PLACE HELLO, {@code key=value} pairs joined by ';'
 * (PROTOCOL.md "Placement in a pool"): {@code program} (for the log), {@code host} (the client host's
 * identity, for the locality policy), {@code gpu_model} (part of the GPU's name), {@code gpu_memory} (bytes
 * each GPU must have at least). Unknown keys are ignored, so later clients can ask more.
 */
public record PlacementQuestion(String program, PoolRequest request) {
    public static PlacementQuestion parse(String text, int gpus) {
        String program = "";
        String host = "";
        String model = "";
        long memory = 0;
        for (String pair : text.split(";")) {
            int eq = pair.indexOf('=');
            if (eq <= 0) continue;
            String key = pair.substring(0, eq).strip();
            String value = pair.substring(eq + 1).strip();
            switch (key) {
                case "program" -> program = value;
                case "host" -> host = value;
                case "gpu_model" -> model = value;
                case "gpu_memory" -> {
                    try {
                        memory = Long.parseLong(value);
                    } catch (NumberFormatException e) {
                        throw new IllegalArgumentException("gpu_memory '" + value + "' is not a number of bytes");
                    }
                    if (memory < 0) throw new IllegalArgumentException("gpu_memory " + value + " is negative");
                }
                default -> { }
            }
        }
        return new PlacementQuestion(program, new PoolRequest(gpus, host, model, memory));
    }
}

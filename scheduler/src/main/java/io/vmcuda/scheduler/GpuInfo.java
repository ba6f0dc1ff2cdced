package io.vmcuda.scheduler;

/**
 * One GPU as the appliance sees it. {@code uuid} is formatted like nvidia-smi
 * ({@code GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}) because it is what goes into a worker's
 * CUDA_VISIBLE_DEVICES: UUIDs stay right even when device enumeration order differs between processes.
 */
public record GpuInfo(int index, String name, String uuid, long memoryTotalBytes, String computeCapability) {}

package io.vmcuda.scheduler;

/** Live figures for one GPU, as last sampled (nvidia-smi); {@code utilizationPercent} is -1 when unknown. */
public record GpuUsage(long memoryUsedBytes, int utilizationPercent) {}

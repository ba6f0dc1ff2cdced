package io.vmcuda.scheduler;

/**
 * A GPU's health, as last sampled (nvidia-smi): temperature in °C, power draw in W, SM clock in MHz, and
 * uncorrected ECC errors since the driver loaded (volatile count). Each is -1 where the GPU or driver does
 * not tell ("[N/A]": ECC off, a vGPU, MIG).
 */
public record GpuHealth(int temperatureCelsius, double powerWatts, int smClockMhz, long eccUncorrectedErrors) {}

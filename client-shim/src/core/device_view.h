/* A GPU as a program in this process sees it: the appliance's answers, except where they describe what the GPU can
 * do with its own host's memory, which is not this process's. One place for both front ends (the driver's
 * cuDeviceGetAttribute and NVIDIA's static runtime above it; vmcuda's runtime's cudaDeviceGetAttribute and
 * cudaGetDeviceProperties). */
#ifndef DEVICE_VIEW_H
#define DEVICE_VIEW_H

/* The value of device attribute `attribute` (CUdevice_attribute and cudaDeviceAttr share their numbers) that this
 * process sees, given the appliance's `value`. */
int vmc_device_view_attribute(int attribute, int value);

#endif

/* C view of PROTOCOL.md "Driver front end": the constants and limits of the hand-written driver operations
 * (ids 3000 and up in cuda-driver.spec), shared by the client's libcuda.so.1 and the worker. Include after
 * cuda.h. */
#ifndef VMC_DRV_WIRE_H
#define VMC_DRV_WIRE_H

/* vmc_drv_ModuleLoad: how the worker loads the image */
enum vmc_drv_load_how {
    VMC_LOAD_MODULE_DATA = 0,      /* cuModuleLoadData */
    VMC_LOAD_MODULE_DATA_EX = 1,   /* cuModuleLoadDataEx, with JIT options */
    VMC_LOAD_MODULE_FATBINARY = 2, /* cuModuleLoadFatBinary */
    VMC_LOAD_LIBRARY = 3,          /* cuLibraryLoadData, with JIT options */
};
#define VMC_MAX_JIT_OPTIONS 32
#define VMC_MAX_JIT_LOG (64u << 10) /* of a JIT log sent back; a longer buffer gets its first 64 KiB */
#define VMC_LINK_READ_MAX (512u << 10) /* of a linked image, per vmc_drv_LinkRead reply (below MAX_CALL_PAYLOAD) */
#define VMC_MAX_LINKS 256 /* JIT links a session holds at once */
#define VMC_MAX_LINK_NAME 4096 /* an input's name (a path) */

/* What __cudaRegisterFatBinary and the runtime's loaders hand the driver: a wrapper around a fat binary.
 * The client sends the fat binary and the wrapper's version; the worker wraps it again. */
#define VMC_FATBIN_WRAPPER_MAGIC 0x466243b1u
struct vmc_fatbin_wrapper {
    uint32_t magic, version;
    const void *data;
    const void *filename_or_fatbins;
};

/* vmc_drv_ParamLayout, vmc_drv_FunctionName, vmc_drv_Launch: what the handle is */
#define VMC_KIND_FUNCTION 0u /* CUfunction */
#define VMC_KIND_KERNEL 1u   /* CUkernel */
#define VMC_MAX_PARAMS 4096  /* parameters of one kernel, each at most 64 KiB at an offset below 64 KiB */
#define VMC_MAX_PARAM_BYTES 65536u

/* cuModuleEnumerateFunctions: the most functions asked for in one call */
#define VMC_MAX_MODULE_FUNCTIONS 65536u

/* cuStreamGetCaptureInfo: the most dependencies of a capturing stream that are passed on */
#define VMC_MAX_CAPTURE_DEPENDENCIES 4096u

/* vmc_drv_Launch flags and limits */
#define VMC_LAUNCH_PER_THREAD 1u  /* stream 0 is the per-thread default stream */
#define VMC_LAUNCH_COOPERATIVE 2u /* cuLaunchCooperativeKernel */
#define VMC_MAX_LAUNCH_ATTRS 63   /* CUlaunchAttribute entries sent (the worker may add the cooperative one) */
#define VMC_MAX_LAUNCH_ARG_BYTES 65536u /* the kernel's argument buffer */

/* vmc_drv_MemcpyOnAppliance dims: 2, 3, or this for cuMemcpy2DUnaligned (synchronous only) */
#define VMC_DIMS_2D_UNALIGNED 4u

/* cuPointerGetAttributes: attributes per call, and the bytes each value takes in the reply (the largest
 * value, CU_POINTER_ATTRIBUTE_P2P_TOKENS, takes 16) */
#define VMC_MAX_POINTER_ATTRS 64
#define VMC_POINTER_ATTR_BYTES 64

/* JIT options whose value is a number, plus the two log buffers (which the worker allocates itself):
 * anything else makes the driver follow a pointer into the caller's process, and is refused. */
static inline int vmc_jit_option_is_log(CUjit_option o) {
    return o == CU_JIT_INFO_LOG_BUFFER || o == CU_JIT_ERROR_LOG_BUFFER;
}
static inline int vmc_jit_option_by_value(CUjit_option o) {
    switch (o) {
    case CU_JIT_MAX_REGISTERS: case CU_JIT_THREADS_PER_BLOCK: case CU_JIT_WALL_TIME:
    case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
    case CU_JIT_OPTIMIZATION_LEVEL: case CU_JIT_TARGET_FROM_CUCONTEXT: case CU_JIT_TARGET:
    case CU_JIT_FALLBACK_STRATEGY: case CU_JIT_GENERATE_DEBUG_INFO: case CU_JIT_LOG_VERBOSE:
    case CU_JIT_GENERATE_LINE_INFO: case CU_JIT_CACHE_MODE: case CU_JIT_POSITION_INDEPENDENT_CODE:
    case CU_JIT_MIN_CTA_PER_SM: case CU_JIT_MAX_THREADS_PER_BLOCK: case CU_JIT_OVERRIDE_DIRECTIVE_VALUES:
    case CU_JIT_SPLIT_COMPILE:
        return 1;
    default:
        return 0;
    }
}

/* vmc_drv_GraphAddNode / vmc_drv_GraphSetNodeParams: the node types whose parameters travel as the union of
 * CUgraphNodeParams as it is (numbers and handles; a copy node's sides must be device memory or arrays).
 * Kernel nodes have their own layout; every other type is not served. */
#define VMC_GRAPH_MAX_DEPENDENCIES 4096
static inline int vmc_graph_node_raw_type(CUgraphNodeType t) {
    switch (t) {
    case CU_GRAPH_NODE_TYPE_MEMCPY:
    case CU_GRAPH_NODE_TYPE_MEMSET:
    case CU_GRAPH_NODE_TYPE_EMPTY:
    case CU_GRAPH_NODE_TYPE_GRAPH:
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
    case CU_GRAPH_NODE_TYPE_MEM_FREE: return 1;
    default: return 0;
    }
}
#define VMC_MAX_CONDITIONAL_BODIES 4096 /* a conditional node's body graphs (a switch's cases) */
#define VMC_MAX_ALLOC_ACCESS_DESCS 64 /* a memory allocation node's access descriptors (at most one per GPU) */
static inline int vmc_graph_copy_on_device(CUmemorytype t) { return t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_ARRAY; }

/* vmc_drv_MirrorAlloc: mapped host memory mirrored for a client across machines (drv_mirror.c): each is
 * copied whole at every synchronising call, so it is meant for flags and small buffers (cuDNN's). */
#define VMC_MAX_MIRRORS 256
#define VMC_MAX_MIRROR_BYTES (64ull << 20)

#endif

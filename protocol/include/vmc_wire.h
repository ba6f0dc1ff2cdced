/* C view of protocol/PROTOCOL.md (the Java view is io.vmcuda.protocol.Wire). Keep them in step. */
#ifndef VMC_WIRE_H
#define VMC_WIRE_H

#include <stdint.h>

#define VMC_PROTO_VERSION 4u
/* HELLO's visible_len when the client has no CUDA_VISIBLE_DEVICES, and the longest one it carries. */
#define VMC_VISIBLE_UNSET 0xFFFFu
#define VMC_VISIBLE_MAX_BYTES 1024u
#define VMC_MAGIC 0x31434D56u /* the bytes 'V' 'M' 'C' '1' read little-endian */

enum vmc_frame_type {
    VMC_HELLO = 1,
    VMC_HELLO_REPLY = 2,
    VMC_BINARY_CHUNK = 3,
    VMC_MANIFEST = 4,
    VMC_CALL = 5,
    VMC_REPLY = 6,
    VMC_OUTPUT = 7,
    VMC_ERROR = 8,
    VMC_CHALLENGE = 9, /* daemon -> client, first on the control port: the nonce HELLO's proof covers */
    VMC_LIBRARIES = 10, /* client -> daemon: name, size and SHA-256 of the libraries NEED_LIBRARIES asked for */
};

#define VMC_FLAG_ASYNC 1u
/* CALL: the payload starts with the u64 number of the call in its process's order of sending (PROTOCOL.md
 * "Calls from several threads"); the arguments follow. */
#define VMC_FLAG_ORDERED 2u

/* The `mode` byte of the bulk copy operations (PROTOCOL.md "Bulk data"). */
#define COPY_ASYNC 1u       /* an asynchronous API call (cudaMemcpyAsync, cuMemcpyHtoDAsync...) on its stream */
#define COPY_PER_THREAD 2u  /* stream 0 is the per-thread default stream (the _ptds/_ptsz entry points) */
#define COPY_DRIVER 4u      /* a driver API call: the worker copies with the driver and answers a CUresult */
/* a copy to the device that must have landed before the answer (mirrored mapped memory, drv_mirror.c: natively
 * those bytes are host stores the GPU sees at once), where a copy from pageable memory returns once staged */
#define COPY_COMPLETE 8u
#define COPY_MODE_BITS 15u

/* The first byte of an array argument (PROTOCOL.md, CALL arguments). */
#define VMC_ARRAY_NULL 0u
#define VMC_ARRAY_ROOM 1u      /* @out[N]: u64 count follows; the elements come back in the REPLY */
#define VMC_ARRAY_DATA 2u      /* @in[N]: u64 count and the elements follow */
#define VMC_ARRAY_TOO_LARGE 3u /* u64 count follows; refused with CUDA_ERROR_INVALID_VALUE */
#define VMC_ARRAY_MAX_ROOM_BYTES (64u << 20) /* the largest @out[N] array the worker makes room for */

#define VMC_MAX_CONTROL_PAYLOAD (64u * 1024u)
#define VMC_MAX_BINARY_CHUNK (4u * 1024u * 1024u)
#define VMC_MAX_CALL_PAYLOAD (1024u * 1024u)

/* ROLE_PLACE (protocol 4): asks an appliance of a pool where to open the session; PLACED answers it. */
/* ROLE_INFO: asks for the tenant's view of the appliance (`vmcuda smi`); INFO answers it with text. */
enum vmc_role { VMC_ROLE_NEW = 0, VMC_ROLE_JOIN = 1, VMC_ROLE_PLACE = 2, VMC_ROLE_INFO = 3 };
/* NEED_LIBRARIES / SEND_LIBRARIES: shared libraries of the shipped program that only the client has (PROTOCOL.md
 * "Client libraries"); at most VMC_MAX_CLIENT_LIBRARIES in one exchange. */
enum vmc_hello_status { VMC_READY = 0, VMC_SEND_BINARY = 1, VMC_REFUSED = 2, VMC_PLACED = 3, VMC_INFO = 4,
                        VMC_NEED_LIBRARIES = 5, VMC_SEND_LIBRARIES = 6 };
#define VMC_MAX_CLIENT_LIBRARIES 64u

#define VMC_SHA256_BYTES 32
#define VMC_SESSION_KEY_BYTES 32
#define VMC_CHALLENGE_BYTES 32
#define VMC_PROOF_BYTES 32
#define VMC_NO_INDEX 0xffffffffu

/* The frame header is written and read field by field in little-endian order (see vmc_io.c);
 * this struct is only the decoded form. */
struct vmc_frame_header {
    uint32_t magic;
    uint16_t type;
    uint16_t flags;
    uint32_t id;
    uint32_t len;
};
#define VMC_HEADER_BYTES 16

/* Largest payload a frame of this type may carry; 0 for an unknown type. */
static inline uint32_t vmc_max_payload(uint16_t type) {
    switch (type) {
    case VMC_HELLO: case VMC_HELLO_REPLY: case VMC_MANIFEST: case VMC_ERROR: case VMC_CHALLENGE: case VMC_LIBRARIES:
        return VMC_MAX_CONTROL_PAYLOAD;
    case VMC_BINARY_CHUNK:
        return VMC_MAX_BINARY_CHUNK;
    case VMC_CALL: case VMC_REPLY: case VMC_OUTPUT:
        return VMC_MAX_CALL_PAYLOAD;
    default:
        return 0;
    }
}

#endif

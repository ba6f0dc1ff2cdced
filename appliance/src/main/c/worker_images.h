/* The session's module images (what the driver front end's cuModuleLoad and cuLibraryLoad calls load, by content), PROTOCOL.md
 * "Driver front end": found by SHA-256 in this worker's memory, else in the daemon's persistent cache, else
 * uploaded by the client. */
#ifndef VMC_WORKER_IMAGES_H
#define VMC_WORKER_IMAGES_H

#include <stdint.h>

#include "worker.h"

struct vmc_w_image {
    uint8_t sha[32];
    const uint8_t *bytes;
    uint64_t size;
};

/* The image with this hash, or NULL; images stay until the worker exits. */
const struct vmc_w_image *vmc_w_image_find(const uint8_t sha[32]);

enum vmc_w_result vmc_w_image_query(struct vmc_wcall *wc);  /* vmc_drv_ImageQuery */
enum vmc_w_result vmc_w_image_upload(struct vmc_wcall *wc); /* vmc_drv_ImageUpload */

#endif

/* Module images' SHA-256, remembered across runs by file identity (drv_image_hash.c). */
#ifndef DRV_IMAGE_HASH_H
#define DRV_IMAGE_HASH_H

#include <stddef.h>
#include <stdint.h>

/* The image's SHA-256: from the cache when the image is mapped from a file already seen (returns 1), else
 * computed (returns 0, and remembered when the image is mapped from a file). */
int vmc_drv_image_sha256(const void *bytes, size_t size, uint8_t sha[32]);
/* Hashes the image again and corrects the cache (the worker found that the remembered hash was wrong). */
void vmc_drv_image_sha256_refresh(const void *bytes, size_t size, uint8_t sha[32]);

#endif

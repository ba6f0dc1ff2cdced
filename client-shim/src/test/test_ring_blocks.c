/* The block size both sides compute for a 1-D copy to the device through a ring (vmc_ring_upload_block,
 * protocol/src/main/c/vmc_io.h): every block fits its slot and the blocks cover the copy; a copy larger than a slot,
 * or any copy over UCX, goes a slot at a time as before protocol 6; a co-located copy that fits a slot goes in at
 * most RING_UPLOAD_PIECES blocks, and never more than the ring has slots (no slot filled twice in one copy), of whole
 * pages, none below RING_UPLOAD_MIN_BLOCK (nor, from RING_UPLOAD_PARALLEL_BLOCK up, below that) unless the slot
 * itself is smaller. */
#include "check.h"
#include "vmc_io.h"

static void check_count(uint64_t count, size_t slot, uint32_t slots) {
    size_t block = vmc_ring_upload_block(count, slot, slots, 1);
    uint64_t blocks = block ? (count + block - 1) / block : 0;
    uint64_t least = count < VMC_RING_UPLOAD_PARALLEL_BLOCK ? VMC_RING_UPLOAD_MIN_BLOCK : VMC_RING_UPLOAD_PARALLEL_BLOCK;
    int fits = block > 0 && block <= slot && blocks * block >= count;
    int shape = count > slot ? block == slot
                             : blocks <= VMC_RING_UPLOAD_PIECES && blocks <= slots &&
                                   (block == slot || block % 4096 == 0) && block >= (slot < least ? slot : least);
    CHECK(fits && shape, "count %llu, slot %zu x %u: blocks of %zu, %llu of them", (unsigned long long)count, slot,
          slots, block, (unsigned long long)blocks);
    CHECK(vmc_ring_upload_block(count, slot, slots, 0) == slot, "count %llu, slot %zu: over UCX a slot at a time",
          (unsigned long long)count, slot);
}

int main(void) {
    static const size_t slot_sizes[] = {64u << 10, 68u << 10, 256u << 10, 4u << 20, 16u << 20};
    static const uint32_t slot_counts[] = {2, 3, 4, 8};
    for (size_t s = 0; s < sizeof slot_sizes / sizeof slot_sizes[0]; s++)
        for (size_t c = 0; c < sizeof slot_counts / sizeof slot_counts[0]; c++) {
            for (uint64_t count = 1; count <= 3 * slot_sizes[s]; count += 4093)
                check_count(count, slot_sizes[s], slot_counts[c]);
            for (uint64_t count = slot_sizes[s] - 2; count <= slot_sizes[s] + 2; count++)
                check_count(count, slot_sizes[s], slot_counts[c]);
        }
    /* the sizes the GPU runs measure, with four 4 MiB slots */
    CHECK(vmc_ring_upload_block(256u << 10, 4u << 20, 4, 1) == (64u << 10), "256 KiB in 64 KiB blocks");
    CHECK(vmc_ring_upload_block(1u << 20, 4u << 20, 4, 1) == (1u << 20), "1 MiB in one block (filled by several threads)");
    CHECK(vmc_ring_upload_block(4u << 20, 4u << 20, 4, 1) == (1u << 20), "4 MiB in 1 MiB blocks");
    CHECK(vmc_ring_upload_block(4u << 20, 4u << 20, 2, 1) == (2u << 20), "4 MiB in two blocks with two slots");
    CHECK(vmc_ring_upload_block(40u << 10, 4u << 20, 4, 1) == (64u << 10), "40 KiB in one block");
    CHECK(vmc_ring_upload_block((4u << 20) + 1, 4u << 20, 4, 1) == (4u << 20), "more than a slot: a slot at a time");
    return check_summary("test_ring_blocks");
}

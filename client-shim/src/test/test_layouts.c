/* The generated codecs of the internal operations (vmc_internal.h, vmc_drv_internal.h from the specs' `layout`
 * lines): what one side writes the other reads back field for field, counted arrays and nested layouts
 * included, and a frame that is cut short or claims more elements than it holds marks the reader's input bad
 * instead of reading past it. Both ends of the wire use exactly these functions. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "vmc_drv_internal.h"
#include "vmc_internal.h"

/* The bytes written by `put`, as a reader sees them. */
static struct vmc_in frame_of(struct vmc_out *o) {
    struct vmc_in in;
    vmc_in_init(&in, o->data, o->len);
    return in;
}

static void launch_round_trip(void) {
    cudaLaunchAttribute attrs[2];
    memset(attrs, 0, sizeof attrs);
    attrs[0].id = cudaLaunchAttributeCooperative;
    attrs[0].val.cooperative = 1;
    attrs[1].id = cudaLaunchAttributePriority;
    attrs[1].val.priority = -3;
    uint8_t params[13] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
    struct vmc_out o = {0};
    vmc_put_launch_ex_args(&o, &(struct vmc_launch_ex_args){
        .kernel = 7, .grid = {1, 2, 3}, .block = {32, 4, 1}, .shared_mem = 1u << 20, .stream = 0xdeadbeef00ull,
        .per_thread = 1, .n_attrs = 2, .attrs = attrs, .params_bytes = sizeof params, .params = params});
    struct vmc_in in = frame_of(&o);
    struct vmc_launch_ex_args a;
    vmc_get_launch_ex_args(&in, &a);
    CHECK(!in.bad && in.pos == in.len, "launch_ex_args: read %zu of %zu bytes (bad %d)", in.pos, in.len, in.bad);
    CHECK(a.kernel == 7 && a.grid[2] == 3 && a.block[0] == 32 && a.shared_mem == 1u << 20 && a.stream == 0xdeadbeef00ull &&
              a.per_thread == 1,
          "launch_ex_args: scalar fields changed on the way");
    cudaLaunchAttribute back[2];
    memcpy(back, a.attrs, sizeof back);
    CHECK(a.n_attrs == 2 && back[0].val.cooperative == 1 && back[1].val.priority == -3, "launch attributes changed");
    CHECK(a.params_bytes == sizeof params && memcmp(a.params, params, sizeof params) == 0, "packed arguments changed");

    /* every shorter frame is refused, never read past */
    for (size_t cut = 0; cut < o.len; cut++) {
        struct vmc_in t;
        vmc_in_init(&t, o.data, cut);
        vmc_get_launch_ex_args(&t, &a);
        CHECK(t.bad, "a launch frame cut to %zu of %zu bytes was read as whole", cut, o.len);
    }
    vmc_out_free(&o);
}

static void counted_integers_round_trip(void) {
    uint32_t options[3] = {1, 0xffffffffu, 42};
    uint64_t values[3] = {0, 0x0123456789abcdefull, 7};
    struct vmc_out o = {0};
    struct vmc_module_load_args w = {.how = 2, .wrapper_version = 1, .n_options = 3, .options = options, .values = values};
    for (int i = 0; i < 32; i++)
        w.sha256[i] = (uint8_t)(i * 7);
    vmc_put_module_load_args(&o, &w);
    struct vmc_in in = frame_of(&o);
    struct vmc_module_load_args r;
    vmc_get_module_load_args(&in, &r);
    CHECK(!in.bad && in.pos == in.len && r.how == 2 && r.wrapper_version == 1 && memcmp(r.sha256, w.sha256, 32) == 0,
          "module_load_args: fixed fields changed");
    int same = r.n_options == 3;
    for (uint32_t i = 0; same && i < 3; i++)
        same = vmc_module_load_args_options_at(&r, i) == options[i] && vmc_module_load_args_values_at(&r, i) == values[i];
    CHECK(same, "module_load_args: the option arrays changed");

    /* a count larger than the bytes that follow it */
    o.len = 0;
    vmc_out_u8(&o, 0);
    vmc_out_u8(&o, 0);
    uint8_t sha[32] = {0};
    vmc_out_bytes(&o, sha, sizeof sha);
    vmc_out_u32(&o, 0x40000000u); /* 2^30 options, none sent */
    in = frame_of(&o);
    vmc_get_module_load_args(&in, &r);
    CHECK(in.bad, "a count of 2^30 elements with none sent was accepted");
    vmc_out_free(&o);
}

static void nested_arrays_and_text(void) {
    uint32_t status[2][3] = {{0, 1, 0}, {0, 0, 101}}, value[2][3] = {{9, 8, 7}, {6, 5, 4}};
    struct vmc_snapshot_device devices[2];
    memset(devices, 0, sizeof devices);
    for (int d = 0; d < 2; d++) {
        strcpy(devices[d].name, d ? "second GPU" : "first GPU");
        devices[d].total_memory = (uint64_t)(d + 1) << 34;
        devices[d].n_attributes = 3;
        devices[d].attribute_status = status[d];
        devices[d].attribute_value = value[d];
    }
    struct vmc_out o = {0};
    vmc_put_snapshot_reply(&o, &(struct vmc_snapshot_reply){.driver_version = 13000, .n_devices = 2, .devices = devices});

    struct vmc_snapshot_device room[2];
    struct vmc_in in = frame_of(&o);
    struct vmc_snapshot_reply r = {.devices = room, .devices_room = 2};
    vmc_get_snapshot_reply(&in, &r);
    CHECK(!in.bad && in.pos == in.len && r.driver_version == 13000 && r.n_devices == 2, "snapshot_reply: header changed");
    CHECK(strcmp(room[1].name, "second GPU") == 0 && room[1].total_memory == (uint64_t)2 << 34 &&
              vmc_snapshot_device_attribute_status_at(&room[1], 2) == 101 &&
              vmc_snapshot_device_attribute_value_at(&room[0], 0) == 9,
          "snapshot_reply: a device changed on the way");

    /* more devices than the reader has room for: refused, nothing written past the room */
    struct vmc_snapshot_device one[1];
    in = frame_of(&o);
    r = (struct vmc_snapshot_reply){.devices = one, .devices_room = 1};
    vmc_get_snapshot_reply(&in, &r);
    CHECK(in.bad, "two devices were read into room for one");
    vmc_out_free(&o);

    const char *path = "/dev/shm/vmcuda-ring-1234";
    vmc_put_ring_file_args(&o, &(struct vmc_ring_file_args){.path_bytes = (uint32_t)strlen(path), .path = path, .size = 1 << 24,
                                                           .slots = 4, .slot_size = 1 << 22});
    in = frame_of(&o);
    struct vmc_ring_file_args f;
    vmc_get_ring_file_args(&in, &f);
    CHECK(!in.bad && f.path_bytes == strlen(path) && memcmp(f.path, path, f.path_bytes) == 0 && f.slots == 4 &&
              f.slot_size == 1 << 22,
          "ring_file_args changed on the way");
    vmc_out_free(&o);
}

int main(void) {
    launch_round_trip();
    counted_integers_round_trip();
    nested_arrays_and_text();
    return check_summary("test_layouts");
}

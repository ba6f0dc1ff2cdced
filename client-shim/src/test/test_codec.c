/* The frame codec shared by shim and worker: headers are validated (magic, type, per-type length
 * limit) before anything is allocated, and payload readers never read past the payload. */
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "check.h"
#include "vmc_io.h"
#include "vmc_sha256.h"

static int header_verdict(uint32_t magic, uint16_t type, uint32_t len, const char **why) {
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    uint8_t h[VMC_HEADER_BYTES];
    vmc_encode_header(h, type, 0, 0, len);
    memcpy(h, &magic, 4);
    write(sv[0], h, sizeof h);
    close(sv[0]);
    struct vmc_frame_header fh;
    int rc = vmc_read_header(sv[1], &fh, why);
    close(sv[1]);
    return rc;
}

int main(void) {
    const char *why = "";
    CHECK(header_verdict(VMC_MAGIC, VMC_CALL, 100, &why) == 0, "valid CALL header rejected: %s", why);
    CHECK(header_verdict(0x12345678, VMC_CALL, 100, &why) != 0 && strstr(why, "magic"), "bad magic accepted");
    CHECK(header_verdict(VMC_MAGIC, 99, 0, &why) != 0 && strstr(why, "type"), "unknown type accepted");
    CHECK(header_verdict(VMC_MAGIC, VMC_CALL, VMC_MAX_CALL_PAYLOAD + 1, &why) != 0 && strstr(why, "limit"),
          "oversized CALL accepted");
    CHECK(header_verdict(VMC_MAGIC, VMC_HELLO, VMC_MAX_CONTROL_PAYLOAD + 1, &why) != 0, "oversized HELLO accepted");
    CHECK(header_verdict(VMC_MAGIC, VMC_BINARY_CHUNK, VMC_MAX_BINARY_CHUNK, &why) == 0, "4 MiB chunk rejected");
    CHECK(header_verdict(VMC_MAGIC, VMC_CALL, 0xffffffffu, &why) != 0, "2^32-1 length accepted");

    /* A truncated header is an error, not a hang or a partial read. */
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    write(sv[0], "VMC1abc", 7);
    close(sv[0]);
    struct vmc_frame_header fh;
    CHECK(vmc_read_header(sv[1], &fh, &why) != 0, "truncated header accepted");
    close(sv[1]);

    /* Encoding round trip, little-endian on the wire. */
    struct vmc_out o = {0};
    vmc_out_begin_frame(&o);
    vmc_out_u32(&o, 0x01020304u);
    vmc_out_u64(&o, 0x1122334455667788ull);
    vmc_out_u16(&o, 0xabcd);
    vmc_out_finish_frame(&o, VMC_REPLY, 1, 42);
    CHECK(o.len == VMC_HEADER_BYTES + 14, "frame length %zu", o.len);
    CHECK(o.data[0] == 'V' && o.data[1] == 'M' && o.data[2] == 'C' && o.data[3] == '1', "magic bytes");
    CHECK(o.data[12] == 14 && o.data[13] == 0, "payload length field");
    CHECK(o.data[16] == 0x04 && o.data[19] == 0x01, "u32 is little-endian");

    struct vmc_in in;
    vmc_in_init(&in, o.data + VMC_HEADER_BYTES, o.len - VMC_HEADER_BYTES);
    CHECK(vmc_in_u32(&in) == 0x01020304u, "u32 round trip");
    CHECK(vmc_in_u64(&in) == 0x1122334455667788ull, "u64 round trip");
    CHECK(vmc_in_u16(&in) == 0xabcd, "u16 round trip");
    CHECK(!in.bad && in.pos == in.len, "reader consumed exactly the payload");
    CHECK(vmc_in_u32(&in) == 0 && in.bad, "reading past the payload yields 0 and marks it bad");
    CHECK(vmc_in_view(&in, 1) == NULL, "no view past the payload");

    /* A length that would wrap the position must not pass. */
    vmc_in_init(&in, o.data, 8);
    CHECK(vmc_in_view(&in, (size_t)-1) == NULL && in.bad, "huge view rejected");
    vmc_out_free(&o);

    /* HMAC-SHA256 of the HELLO proof: RFC 4231 test cases 2 (split message) and 6 (key longer than a block),
     * the first also checked on the daemon's side (AuthTest) with the JDK's HmacSHA256. */
    uint8_t mac[32];
    char hex[65];
    vmc_hmac_sha256("Jefe", 4, "what do ya want ", 16, "for nothing?", 12, mac);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", mac[i]);
    CHECK(strcmp(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843") == 0, "HMAC case 2: %s", hex);
    uint8_t long_key[131];
    memset(long_key, 0xaa, sizeof long_key);
    const char *m6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    vmc_hmac_sha256(long_key, sizeof long_key, m6, strlen(m6), "", 0, mac);
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", mac[i]);
    CHECK(strcmp(hex, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54") == 0, "HMAC case 6: %s", hex);
    return check_summary("test_codec");
}

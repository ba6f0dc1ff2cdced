/* TLS on a client's connections (PROTOCOL.md "Encryption"), with the system's OpenSSL: first the client's
 * handshake with the daemon, which proves the appliance's certificate; then, on the same socket once the
 * daemon has handed it to the session's worker, the link's handshake between client and worker, keyed by a
 * secret the daemon gave both. Each attaches itself as the descriptor's secure channel (vmc_io.h), so every
 * frame and bulk byte afterwards is encrypted without the rest of the code knowing. */
#ifndef VMC_TLS_H
#define VMC_TLS_H

#include <stddef.h>
#include <stdint.h>
#include "vmc_wire.h"

/* The client's side of the daemon's handshake on a connected socket (its SO_RCVTIMEO bounds it): the
 * daemon's certificate must chain to ca_file, and its name or address must be `host` unless verify_name is
 * 0. 0, or -1 with why. */
int vmc_tls_connect_daemon(int fd, const char *ca_file, const char *host, int verify_name, char *why, size_t why_len);

/* Ends whatever TLS fd carried (sending nothing: the daemon's part is over and it has let the socket go),
 * then runs the link's handshake keyed by `key`: the worker initiates (TLS client), the client answers (TLS
 * server). 0, or -1 with why. */
int vmc_tls_link(int fd, const uint8_t key[VMC_LINK_KEY_BYTES], int initiate, char *why, size_t why_len);

#endif
